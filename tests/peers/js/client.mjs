// The official A2A JavaScript SDK's client (@a2a-js/sdk) against an agent, a real peer for toolnexus' tests.
// Usage: node client.mjs BASE_URL TRANSPORT [0.3]   (TRANSPORT: JSONRPC or HTTP+JSON, the one it must
// prefer; 0.3: keep only the card's 0.3 interface of that binding and speak it with the SDK's legacy compat)
// Runs one script (a blocking send, a get, a stream, a non-blocking send and its cancel, an unknown
// task) and prints what it saw as one JSON object on stdout; a failed step is {"error": "..."}.
import { randomUUID } from "node:crypto";
import {
  AgentCardResolver, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory,
} from "@a2a-js/sdk/client";

const [url, transport, version] = process.argv.slice(2);
const USER = 1;
const STATES = { 1: "submitted", 2: "working", 3: "completed", 4: "failed", 5: "canceled", 6: "input-required" };
const message = (text, extra = {}) => ({
  messageId: randomUUID(), contextId: "", taskId: "", role: USER, metadata: undefined, extensions: [], referenceTaskIds: [],
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }], ...extra,
});
const request = (msg, configuration = undefined) => ({ tenant: "", message: msg, configuration, metadata: undefined });
const reply = (task) => (task.artifacts || []).flatMap((a) => a.parts)
  .map((p) => (p.content && p.content.$case === "text" ? p.content.value : "")).join("");
const step = async (fn) => { try { return await fn(); } catch (e) { return { error: String(e && e.message || e) }; } };

const legacy = version === "0.3";
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  preferredTransports: [transport],
  ...(legacy ? { transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } }),
    new RestTransportFactory({ legacyCompat: { enabled: true } })] } : {}),
}));
let client;
if (legacy) {
  const card = await AgentCardResolver.default.resolve(url);
  card.supportedInterfaces = card.supportedInterfaces.filter(
    (i) => i.protocolBinding === transport && i.protocolVersion.startsWith("0.3"));
  client = await factory.createFromAgentCard(card);
} else {
  client = await factory.createFromUrl(url);
}
const out = { protocolVersion: client.protocolVersion };
out.send = await step(async () => {
  const task = await client.sendMessage(request(message("hello from js")));
  return { id: task.id, state: STATES[task.status.state], reply: reply(task) };
});
out.get = await step(async () => {
  const task = await client.getTask({ tenant: "", id: out.send.id, historyLength: undefined });
  return { state: STATES[task.status.state], history: task.history.length };
});
out.stream = await step(async () => {
  const kinds = [];
  for await (const event of client.sendMessageStream(request(message("stream from js")))) {
    const payload = event.payload;
    kinds.push(payload.$case === "statusUpdate" ? `status:${STATES[payload.value.status.state]}` : payload.$case);
  }
  return kinds;
});
out.cancel = await step(async () => {
  const started = await client.sendMessage(request(message("slow 20"), {
    acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true }));
  const canceled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
  return { state: STATES[canceled.status.state] };
});
out.unknown = await step(async () => client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }));
console.log(JSON.stringify(out));
