// Drives an MCP server with the official TypeScript SDK's client (@modelcontextprotocol/sdk).
//
//   node mcp_client.mjs '<plan as JSON>'
//
// The plan names the transport ({"stdio": {"command", "args", "env"}} or {"http": url}),
// how to answer elicitations ("elicit": {"action", "content"}, or null to declare no
// elicitation capability) and the calls to make. Prints one JSON object: the tools
// listed, each call's result (or its protocol error) and the questions the server asked.
// The client itself validates each structured result against the tool's outputSchema.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
const capabilities = plan.elicit ? { elicitation: {} } : {};
const client = new Client({ name: "ts-check", version: "1.0.0" }, { capabilities });
const asked = [];
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push({ message: request.params.message, schema: request.params.requestedSchema });
    return plan.elicit;
  });
}
const transport = plan.http
  ? new StreamableHTTPClientTransport(new URL(plan.http))
  : new StdioClientTransport({ ...plan.stdio, stderr: "inherit" });

const seen = { tools: [], results: [], asked };
try {
  await client.connect(transport);
  seen.protocol = transport.protocolVersion ?? null;
  seen.tools = (await client.listTools()).tools;
  for (const call of plan.calls) {
    try {
      seen.results.push(await client.callTool(call));
    } catch (error) {
      seen.results.push({ protocolError: { code: error.code ?? null, message: error.message } });
    }
  }
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(seen) + "\n");
