// Drives an agentgraph agent server with the official JavaScript client (@langchain/langgraph-sdk).
//
//   node langgraph_client.mjs <server URL>
//
// Creates a thread, streams a run that ends on an interrupt, answers it with
// `command.resume` on a new run and joins that run. Prints one JSON object:
// what the client saw.
import { Client } from "@langchain/langgraph-sdk";

const [url] = process.argv.slice(2);
const client = new Client({ apiUrl: url });

const thread = await client.threads.create();
const events = [];
let interrupt = null;
let runId = null;
for await (const part of client.runs.stream(thread.thread_id, "asks", {
  input: { messages: [{ type: "human", content: "the date" }] },
  streamMode: ["values", "updates"],
})) {
  events.push(part.event);
  if (part.event === "metadata") runId = part.data.run_id;
  if (part.event === "values" && part.data.__interrupt__) interrupt = part.data.__interrupt__[0];
}
const waiting = await client.threads.get(thread.thread_id);
const first = await client.runs.get(thread.thread_id, runId);
const resumed = await client.runs.create(thread.thread_id, "asks", {
  command: { resume: "yes" },
});
const final = await client.runs.join(thread.thread_id, resumed.run_id);
const after = await client.threads.get(thread.thread_id);
console.log(JSON.stringify({
  events,
  interrupt,
  firstStatus: first.status,
  waitingStatus: waiting.status,
  messages: final.messages.map((m) => [m.type, m.content, typeof m.id]),
  threadStatus: after.status,
}));
