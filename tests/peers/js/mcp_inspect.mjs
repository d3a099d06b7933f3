// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk) against an MCP server over
// streamable HTTP (a URL) or stdio (a command): its capabilities, prompts (one got with arguments),
// resources and templates (one read), a tool called with a progress token, and the
// notifications that follow a change the server is asked to make (then the prompts listed again:
// "after").
// Usage: node mcp_inspect.mjs PLAN_JSON (URL | COMMAND [ARGS...])
//   PLAN_JSON: {"prompt": [name, {args}], "read": uri, "call": [tool, {args}],
//               "subscribe": uri, "change": [[tool, {args}], ...], "expect": N notifications,
//               "complete": [[ref, {name, value}], ...], "write": [[path, text], ...]}
//   ("write": files written after subscribing, as an editor would, for a server that watches them)
// Prints one JSON object with what it saw.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [planText, target, ...args] = process.argv.slice(2);
const plan = JSON.parse(planText);
const transport = target.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "toolnexus-test", version: "1.0.0" });
const out = { notifications: [], progress: [] };
const heard = (schema) =>
  client.setNotificationHandler(schema, (n) => out.notifications.push({ method: n.method, params: n.params || {} }));
for (const schema of [
  ToolListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
]) heard(schema);
await client.connect(transport);
const attempt = async (work) => {
  try { return await work(); } catch (e) { return { error: String((e && e.message) || e), code: e && e.code }; }
};
out.server = client.getServerVersion();
out.capabilities = client.getServerCapabilities();
out.prompts = (await client.listPrompts()).prompts;
if (plan.prompt) out.prompt = await attempt(() => client.getPrompt({ name: plan.prompt[0], arguments: plan.prompt[1] }));
if (plan.badPrompt) out.badPrompt = await attempt(() => client.getPrompt({ name: plan.badPrompt[0], arguments: plan.badPrompt[1] }));
out.resources = (await client.listResources()).resources;
out.templates = (await client.listResourceTemplates()).resourceTemplates;
if (plan.read) out.read = await attempt(() => client.readResource({ uri: plan.read }));
if (plan.badRead) out.badRead = await attempt(() => client.readResource({ uri: plan.badRead }));
if (plan.call) {
  out.call = await attempt(() =>
    client.callTool({ name: plan.call[0], arguments: plan.call[1] }, undefined, {
      onprogress: (p) => out.progress.push(p),
    }),
  );
}
if (plan.complete) {
  out.complete = [];
  for (const [ref, argument] of plan.complete) out.complete.push(await attempt(() => client.complete({ ref, argument })));
}
if (plan.subscribe) out.subscribed = await attempt(() => client.subscribeResource({ uri: plan.subscribe }));
for (const [path, text] of plan.write || []) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
for (const [name, input] of plan.change || []) {
  await attempt(() => client.callTool({ name, arguments: input }));
}
// the server tells of a change after it answers the call that made it: wait for what is expected
const deadline = Date.now() + 10000;
while (out.notifications.length < (plan.expect || 0) && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 20));
}
if (plan.expect) out.after = (await client.listPrompts()).prompts;
await client.close();
console.log(JSON.stringify(out));
