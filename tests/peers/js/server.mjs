// An agent served by the official A2A JavaScript SDK (@a2a-js/sdk), a real peer for toolnexus' tests.
// Usage: node server.mjs [--compat] [--rest]   prints its base URL on the first line of stdout
// (--rest: the SDK's HTTP+JSON handler instead of JSON-RPC, the only binding on its card).
// "question" asks for input (input-required); the answer completes the same task, after a pause
// in which the task still reads input-required (what the SDK returns to a non-blocking answer);
// "chunked" streams its reply as three appends to one artifact; "slow" works for a second first;
// anything else is echoed. Push notifications use the SDK's own in-memory store and sender.
import { randomUUID } from "node:crypto";
import express from "express";
import {
  AgentEvent, DefaultExecutionEventBusManager, DefaultPushNotificationSender, DefaultRequestHandler,
  InMemoryPushNotificationStore, InMemoryTaskStore,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const compat = process.argv.includes("--compat");
const binding = process.argv.includes("--rest") ? "HTTP+JSON" : "JSONRPC";
const STATE = { submitted: 1, working: 2, completed: 3, inputRequired: 6 };
const AGENT = 2;
const now = () => new Date().toISOString();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const message = (ctx, text) => ({ messageId: randomUUID(), contextId: ctx.contextId, taskId: ctx.taskId, role: AGENT,
  parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] });
const status = (ctx, state, msg) => AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId,
  status: { state, message: msg, timestamp: now() }, metadata: undefined });
const artifact = (ctx, text, append, lastChunk) => AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId,
  artifact: { artifactId: "reply-1", name: "reply", description: "", parts: [textPart(text)], metadata: undefined, extensions: [] },
  append, lastChunk, metadata: undefined });

const executor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts.map((p) => (p.content && p.content.$case === "text" ? p.content.value : "")).join("");
    const waiting = ctx.task && ctx.task.status && ctx.task.status.state === STATE.inputRequired;
    bus.publish(AgentEvent.task(ctx.task || { id: ctx.taskId, contextId: ctx.contextId,
      status: { state: STATE.submitted, message: undefined, timestamp: now() }, artifacts: [], history: [ctx.userMessage],
      metadata: undefined }));
    if (waiting) {
      await sleep(300); // the task still reads input-required, with the same question, meanwhile
      bus.publish(status(ctx, STATE.working, undefined));
      bus.publish(artifact(ctx, `answered: ${text}`, false, true));
      bus.publish(status(ctx, STATE.completed, undefined));
    } else if (text.includes("question")) {
      bus.publish(status(ctx, STATE.inputRequired, message(ctx, "What is your favourite colour?")));
    } else if (text.includes("chunked")) {
      bus.publish(status(ctx, STATE.working, undefined));
      const pieces = ["echo: chu", "nked repl", "y please"];
      for (const [i, piece] of pieces.entries()) {
        await sleep(text.includes("paced") ? 300 : 30); // paced: a piece a reader sees arrive
        bus.publish(artifact(ctx, piece, i > 0, i === pieces.length - 1));
      }
      bus.publish(status(ctx, STATE.completed, undefined));
    } else {
      bus.publish(status(ctx, STATE.working, undefined));
      if (text.includes("slow")) await sleep(1000);
      bus.publish(artifact(ctx, `echo: ${text}`, false, true));
      bus.publish(status(ctx, STATE.completed, undefined));
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: "", status: { state: 5, message: undefined, timestamp: now() },
      metadata: undefined }));
    bus.finished();
  },
};

const card = {
  name: "js-echo", description: "An echo agent on the official A2A JavaScript SDK", version: "1.0.0",
  supportedInterfaces: [], provider: undefined, capabilities: { streaming: true, pushNotifications: true, extensions: [] },
  securitySchemes: {}, securityRequirements: [], defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "echo", description: "Echoes; asks a question when told to", tags: ["test"],
    examples: ["ask me a question"], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};

const pushStore = new InMemoryPushNotificationStore();
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, new DefaultExecutionEventBusManager(),
  pushStore, new DefaultPushNotificationSender(pushStore));
const app = express();
const legacyCompat = compat ? { enabled: true } : undefined;
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler, legacyCompat }));
const serve = binding === "HTTP+JSON" ? restHandler : jsonRpcHandler;
app.use("/", serve({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
const server = app.listen(0, "127.0.0.1", () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  card.supportedInterfaces.push({ url, protocolBinding: binding, tenant: "", protocolVersion: "1.0" });
  if (compat) card.supportedInterfaces.push({ url, protocolBinding: binding, tenant: "", protocolVersion: "0.3" });
  console.log(url);
});
process.stdin.on("end", () => process.exit(0)); // the test closes our stdin: we go
process.stdin.resume();
