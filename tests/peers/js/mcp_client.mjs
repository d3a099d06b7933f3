// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk) against a server it starts
// over stdio, a real peer for toolnexus' tests.
// Usage: node mcp_client.mjs CALLS_JSON COMMAND [ARGS...]   (CALLS_JSON: [[tool, {args}], ...])
// Prints one JSON object: {"server": {...}, "tools": [...], "calls": [{isError, text} | {error}]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [calls, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "toolnexus-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: [], calls: [] };
out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, required: t.inputSchema.required || [] }));
for (const [name, input] of JSON.parse(calls)) {
  try {
    const result = await client.callTool({ name, arguments: input });
    out.calls.push({ isError: Boolean(result.isError), text: result.content.map((c) => c.text).join("") });
  } catch (e) {
    out.calls.push({ error: String(e && e.message || e) });
  }
}
await client.close();
console.log(JSON.stringify(out));
