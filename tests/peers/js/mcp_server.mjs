// An MCP server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.x, the handshake era),
// a real peer for toolnexus' tests of its MCP mode, session and doctor: tools (one with an output
// schema, one that fails, one slow with progress and a log line, one asking the user through
// elicitation, one having the client's model sample, one listing the client's roots, one that
// touches a subscribed resource), resources (text, a blob, a template, one that changes, with
// subscriptions), and a prompt with arguments.
// Usage: node mcp_server.mjs stdio | node mcp_server.mjs http   (http: stateful streamable HTTP on a
// free loopback port; prints "MCP <url>" on the first line of stdout)
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { serveHttp } from "./mcp_http.mjs";
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const LOGO = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function build() {
  const server = new McpServer(
    { name: "everything-ts", version: "1.0.0" },
    {
      capabilities: { logging: {}, resources: { subscribe: true, listChanged: true } },
      instructions: "A server with every MCP feature, on the TypeScript SDK.",
    },
  );
  const state = { counter: 0, subscribed: new Set() };
  const text = (t) => ({ content: [{ type: "text", text: t }] });

  server.registerTool("add", {
    description: "Add two integers (a structured result, with an output schema).",
    inputSchema: { a: z.number().int().default(2), b: z.number().int().default(3) },
    outputSchema: { total: z.number().int(), terms: z.array(z.number().int()) },
    annotations: { readOnlyHint: true },
  }, async ({ a, b }) => ({
    content: [{ type: "text", text: JSON.stringify({ total: a + b, terms: [a, b] }) }],
    structuredContent: { total: a + b, terms: [a, b] },
  }));

  server.registerTool("fail", {
    description: "Fail on purpose: a tool error, as a result.",
    inputSchema: { reason: z.string() },
  }, async ({ reason }) => ({ ...text(`failed on purpose: ${reason}`), isError: true }));

  server.registerTool("slow", {
    description: "Count slowly, reporting progress and logging a line.",
    inputSchema: { steps: z.number().int() },
  }, async ({ steps }, extra) => {
    await server.sendLoggingMessage({ level: "info", data: `slow starts: ${steps} steps` }, extra.sessionId);
    const token = extra._meta && extra._meta.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
        });
      }
      await sleep(50);
    }
    return text(`done in ${steps} steps`);
  });

  server.registerTool("greet", {
    description: "Greet the user, whose name is asked through elicitation.",
    inputSchema: {},
  }, async () => {
    const answer = await server.server.elicitInput({
      message: "Who are you?",
      requestedSchema: {
        type: "object",
        properties: {
          name: { type: "string", description: "Your name" },
          age: { type: "integer", description: "Your age in years", default: 30 },
          colour: { type: "string", enum: ["red", "green", "blue"], default: "blue" },
        },
        required: ["name"],
      },
    });
    if (answer.action !== "accept") return { ...text(`you chose to ${answer.action}`), isError: true };
    const { name, age, colour } = answer.content;
    return text(`Hello ${name}, ${age}, who likes ${colour}!`);
  });

  server.registerTool("haiku", {
    description: "Have the client's model write a haiku (sampling).",
    inputSchema: { topic: z.string() },
  }, async ({ topic }) => {
    const poem = await server.server.createMessage({
      messages: [{ role: "user", content: { type: "text", text: `A haiku about ${topic}` } }],
      systemPrompt: "You are a poet.",
      maxTokens: 100,
    });
    return text(`the model ${poem.model} said: ${poem.content.text}`);
  });

  server.registerTool("where", { description: "List the client's roots.", inputSchema: {} }, async () => {
    const listed = await server.server.listRoots();
    return text(listed.roots.map((r) => r.uri).join(", ") || "no roots");
  });

  server.registerTool("touch", {
    description: "Change the counter resource and say so to its subscribers.",
    inputSchema: {},
  }, async () => {
    state.counter += 1;
    if (state.subscribed.has("note://counter")) await server.server.sendResourceUpdated({ uri: "note://counter" });
    return text(`counter is ${state.counter}`);
  });

  server.registerResource("greeting", "note://greeting", { description: "A greeting", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "Hello from the TypeScript SDK server." }] }));
  server.registerResource("logo", "note://logo", { description: "A one-pixel PNG", mimeType: "image/png" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: LOGO }] }));
  server.registerResource("counter", "note://counter", { description: "Changes on touch", mimeType: "application/json" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ counter: state.counter }) }] }));
  server.registerResource("item", new ResourceTemplate("note://items/{item}", { list: undefined }),
    { description: "One item by name", mimeType: "text/plain" },
    async (uri, { item }) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `item ${item}` }] }));
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    state.subscribed.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    state.subscribed.delete(request.params.uri);
    return {};
  });

  server.registerPrompt("review", {
    description: "Review some code",
    argsSchema: { code: z.string(), language: z.string().optional() },
  }, ({ code, language }) => ({
    messages: [
      { role: "user", content: { type: "text", text: `Please review this ${language || "python"} code:\n${code}` } },
      { role: "assistant", content: { type: "text", text: "I will look at it." } },
    ],
  }));
  return server;
}

if (process.argv[2] === "http") {
  serveHttp(build);
} else {
  await build().connect(new StdioServerTransport());
}
