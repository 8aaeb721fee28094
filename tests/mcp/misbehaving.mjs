// A small MCP server (official SDK, stdio) that misbehaves on request, for the
// failure tests: `crash` exits mid-call, `hang` never answers (and notes the
// client's cancellation), `huge` returns `mb` megabytes of text, `note`
// answers normally. Every call is appended to $CALL_LOG, one line each.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { appendFileSync } from "node:fs";

const log = (line) => {
  if (process.env.CALL_LOG) appendFileSync(process.env.CALL_LOG, line + "\n");
};
const obj = (properties = {}) => ({ type: "object", properties });

const server = new Server({ name: "misbehaving", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "note", description: "Stores a note.", inputSchema: obj({ text: { type: "string" } }),
      annotations: { readOnlyHint: false, destructiveHint: true } },
    { name: "peek", description: "Reads nothing.", inputSchema: obj(), annotations: { readOnlyHint: true } },
    { name: "crash", description: "Exits mid-call.", inputSchema: obj() },
    { name: "hang", description: "Never answers.", inputSchema: obj() },
    { name: "huge", description: "A large result.", inputSchema: obj({ mb: { type: "number" } }) },
    { name: "fail", description: "Reports an error.", inputSchema: obj() },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args = {} } = request.params;
  log(`call ${name} ${JSON.stringify(args)}`);
  process.stderr.write(`called ${name}\n`);
  switch (name) {
    case "note":
      return { content: [{ type: "text", text: `noted: ${args.text}` }] };
    case "peek":
      return { content: [{ type: "text", text: "nothing here" }] };
    case "crash":
      process.exit(3);
    case "hang":
      return new Promise(() => {
        extra.signal.addEventListener("abort", () => log("cancelled hang"));
      });
    case "huge":
      return { content: [{ type: "text", text: "x".repeat(Math.round((args.mb ?? 5) * 1024 * 1024)) }] };
    case "fail":
      return { content: [{ type: "text", text: "the disk is full" }], isError: true };
    default:
      throw new Error(`unknown tool ${name}`);
  }
});
log("started");
await server.connect(new StdioServerTransport());
