// An MCP server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.x, its experimental
// tasks: MCP 2025-11-25's long-running requests) over stdio, a real peer for toolnexus' MCP tasks:
// it declares the tasks capability (list, cancel, tools/call) and three tools that run as tasks.
// `brew` (taskSupport required) works a step at a time, its status message saying which, then
// completes; `stall` (optional) works until it is cancelled; `doomed` (required) fails.
// The status messages carry square brackets, as markup would, to show they are shown as text.
// Usage: node mcp_tasks.mjs
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { z } from "zod";

const POLL_MS = 50;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });
const store = new InMemoryTaskStore();
const server = new McpServer(
  { name: "tasks-ts", version: "1.0.0" },
  {
    capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: store,
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  },
);

const live = async (taskId) => {
  const task = await store.getTask(taskId);
  return task !== null && task.status === "working";
};

// A tool run as a task: `work(taskId, args)` runs after the task is created and answered.
function taskTool(name, description, taskSupport, inputSchema, work) {
  server.experimental.tasks.registerToolTask(name, { description, inputSchema, execution: { taskSupport } }, {
    async createTask(args, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60000, pollInterval: POLL_MS });
      work(task.taskId, args).catch(() => {}); // a cancelled task refuses its result: nothing to do
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

await server.connect(new StdioServerTransport());
