// An MCP server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.x, its experimental
// tasks: MCP 2025-11-25's long-running requests) over stdio or streamable HTTP, a real peer for toolnexus' MCP tasks:
// it declares the tasks capability (list, cancel, tools/call) and tools that run as tasks.
// `brew` (taskSupport required) works a step at a time, its status message saying which, then
// completes; `stall` (optional) works until it is cancelled; `doomed` (required) fails.
// `confirm_delete` and `write_haiku` are the SDK's interactive task example's
// (examples/server/simpleTaskInteractive.js) on its own machinery: while it runs the task asks the
// client (elicitation, sampling) with `relatedTask`, so the task goes input_required and the
// question is queued until the client asks for the result (tasks/result), then goes back to working.
// `seed` (a plain tool) leaves N finished tasks behind, so tasks/list has pages (the store's 10).
// The status messages carry square brackets, as markup would, to show they are shown as text.
// Usage: node mcp_tasks.mjs [http]   (http: stateful streamable HTTP on a free loopback port,
// a server per session over one task store; prints "MCP <url>" on the first line of stdout)
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { serveHttp } from "./mcp_http.mjs";
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { CreateMessageResultSchema, ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const POLL_MS = 50;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });
const store = new InMemoryTaskStore();
let server; // the server whose tools are being registered (build())

const live = async (taskId) => {
  const task = await store.getTask(taskId);
  return task !== null && (task.status === "working" || task.status === "input_required");
};

// A tool run as a task: `work(taskId, args, ask)` runs after the task is created and answered;
// `ask(request, schema)` puts a question to the client for the task (input_required meanwhile).
function taskTool(name, description, taskSupport, inputSchema, work) {
  server.experimental.tasks.registerToolTask(name, { description, inputSchema, execution: { taskSupport } }, {
    async createTask(args, { taskStore, taskRequestedTtl, sendRequest }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60000, pollInterval: POLL_MS });
      const ask = async (request, schema) => {
        const answer = await sendRequest(request, schema, { relatedTask: { taskId: task.taskId } });
        await taskStore.updateTaskStatus(task.taskId, "working", "answered [ok]");
        return answer;
      };
      // a question refused fails the task, as the SDK's example does; a cancelled task refuses
      // its result: nothing to do
      work(task.taskId, args, ask).catch(async (error) => {
        if (await live(task.taskId)) await store.storeTaskResult(task.taskId, "failed", { ...text(`Error: ${error.message}`), isError: true });
      });
      return { task };
    },
    async getTask(_args, { taskId, taskStore }) {
      return await taskStore.getTask(taskId);
    },
    async getTaskResult(_args, { taskId, taskStore }) {
      return await taskStore.getTaskResult(taskId);
    },
  });
}

// A server with its tools (one per HTTP session; the tasks are the store's).
function build() {
  server = new McpServer(
    { name: "tasks-ts", version: "1.0.0" },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: store,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  registerTools();
  return server;
}

function registerTools() {
  taskTool("brew", "Brew a pot a step at a time (a task: required).", "required",
    { steps: z.number().int().default(3) }, async (taskId, { steps }) => {
      for (let i = 1; i <= steps; i++) {
        await sleep(100);
        if (!(await live(taskId))) return;
        await store.updateTaskStatus(taskId, "working", `step ${i} of [b]${steps}[/b]`);
      }
      await store.storeTaskResult(taskId, "completed", text(`brewed in ${steps} steps`));
    });

  taskTool("stall", "Work until cancelled (a task: optional).", "optional", {}, async (taskId) => {
    await store.updateTaskStatus(taskId, "working", "stalling [until cancelled]");
    while (await live(taskId)) await sleep(POLL_MS);
  });

  taskTool("doomed", "Fail as a task (required).", "required", {}, async (taskId) => {
    await sleep(50);
    await store.storeTaskResult(taskId, "failed", { ...text("the pot [cracked]"), isError: true });
  });

  taskTool("confirm_delete", "Ask before deleting a file (elicitation, a task: required).", "required",
    { filename: z.string().default("unknown.txt") }, async (taskId, { filename }, ask) => {
      const answer = await ask({
        method: "elicitation/create",
        params: {
          mode: "form",
          message: `Are you sure you want to delete '${filename}'?`,
          requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] },
        },
      }, ElicitResultSchema);
      const yes = answer.action === "accept" && answer.content?.confirm === true;
      await store.storeTaskResult(taskId, "completed", text(yes ? `Deleted '${filename}'` : "Deletion cancelled"));
    });

  taskTool("write_haiku", "Ask the client's model for a haiku (sampling, a task: required).", "required",
    { topic: z.string().default("nature") }, async (taskId, { topic }, ask) => {
      const answer = await ask({
        method: "sampling/createMessage",
        params: { messages: [{ role: "user", content: { type: "text", text: `Write a haiku about ${topic}` } }], maxTokens: 50 },
      }, CreateMessageResultSchema);
      const haiku = answer.content?.type === "text" ? answer.content.text : "No response";
      await store.storeTaskResult(taskId, "completed", text(`Haiku:\n${haiku}`));
    });

  server.registerTool("seed", { description: "Leave N finished tasks behind (tasks/list pages).",
    inputSchema: { n: z.number().int().default(12) } }, async ({ n }) => {
    for (let i = 0; i < n; i++) {
      const task = await store.createTask({ ttl: 600000, pollInterval: POLL_MS });
      await store.storeTaskResult(task.taskId, "completed", text(`seeded ${i + 1} of ${n}`));
    }
    return text(`seeded ${n} tasks`);
  });
}

if (process.argv[2] === "http") {
  serveHttp(build);
} else {
  await build().connect(new StdioServerTransport());
}
