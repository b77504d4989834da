// Drives an A2A agent with the official TypeScript SDK (@a2a-js/sdk) over one binding.
// Usage: node a2a_client.mjs <base url> <JSONRPC|HTTP+JSON> <ask|cancel|task-only>
// Prints one JSON line per step: the states and texts seen.
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

const [url, binding, scenario] = process.argv.slice(2);
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
    preferredTransports: [binding],
  }),
);
const client = await factory.createFromUrl(url);
let n = 0;
const message = (text, ids = {}) => ({
  messageId: `js-${++n}`,
  role: 1, // ROLE_USER
  parts: [{ content: { $case: "text", value: text } }],
  contextId: ids.contextId ?? "",
  taskId: ids.taskId ?? "",
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const request = (msg) => ({ tenant: "", message: msg, configuration: undefined, metadata: undefined });
const text = (parts) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

async function follow(msg, stopAt) {
  const seen = [];
  const contexts = new Set();
  let ids = {};
  for await (const event of client.sendMessageStream(request(msg))) {
    const { $case, value } = event.payload;
    contexts.add(value.contextId);
    if ($case === "task") {
      ids = { taskId: value.id, contextId: value.contextId };
      seen.push(value.status.state);
    } else if ($case === "statusUpdate") {
      ids = { taskId: value.taskId, contextId: value.contextId };
      seen.push(value.status.state, text(value.status.message?.parts ?? []));
    } else if ($case === "artifactUpdate") {
      seen.push(`artifact:${text(value.artifact.parts)}`);
    }
    if (stopAt && seen.includes(stopAt)) return { seen, ids, contexts };
  }
  return { seen, ids, contexts };
}

if (scenario === "ask") {
  const first = await follow(message("kite"));
  console.log(JSON.stringify(first.seen));
  const second = await follow(message("green", first.ids));
  console.log(JSON.stringify(second.seen));
  const task = await client.getTask({ tenant: "", id: first.ids.taskId, historyLength: undefined });
  console.log(JSON.stringify([task.status.state, task.contextId === first.ids.contextId]));
} else if (scenario === "cancel") {
  const first = await follow(message("hi"), 2); // TASK_STATE_WORKING
  const cancelled = await client.cancelTask({ tenant: "", id: first.ids.taskId, metadata: undefined });
  console.log(JSON.stringify([cancelled.status.state]));
  const task = await client.getTask({ tenant: "", id: first.ids.taskId, historyLength: undefined });
  console.log(JSON.stringify([task.status.state, text(task.status.message?.parts ?? [])]));
} else if (scenario === "task-only") {
  // Answers naming their task only: the agent infers the contextId from the task.
  const first = await follow(message("go"));
  const taskOnly = { taskId: first.ids.taskId };
  const unclear = await follow(message("hmm", taskOnly));
  const answer = await follow(message("yes", taskOnly));
  const task = await client.getTask({ tenant: "", id: first.ids.taskId, historyLength: undefined });
  const same = (step) => [...step.contexts].every((c) => c === first.ids.contextId);
  console.log(JSON.stringify(unclear.seen));
  console.log(JSON.stringify(answer.seen));
  console.log(JSON.stringify([task.status.state, same(first), same(unclear), same(answer)]));
}
process.exit(0);
