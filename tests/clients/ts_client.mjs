// Drives `codemode serve` with the official MCP TypeScript SDK, the client
// most MCP hosts are built on.
//
// Usage: CODEMODE_TEST_NODE_DIR=DIR node ts_client.mjs CODEMODE_BINARY [ARGS...]
// DIR holds node_modules/@modelcontextprotocol/sdk (scripts/lib.sh installs
// it). Every check is an assertion; the last line printed is "all checks
// passed". The SDK validates each result's structuredContent against
// run_python's outputSchema (cached by listTools) and throws if one does not fit.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

const nodeDir = process.env.CODEMODE_TEST_NODE_DIR;
assert.ok(nodeDir, "CODEMODE_TEST_NODE_DIR must name the npm prefix");
const sdk = (rel) =>
  import(pathToFileURL(path.join(nodeDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", rel)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command,
  args,
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "codemode-ts-test", version: "1.0.0" });
await client.connect(transport);

// Identity and the servers, before any call.
const info = client.getServerVersion();
console.log(`server: ${info.name} ${info.version}`);
assert.equal(info.name, "codemode");
assert.ok(info.title, "serverInfo has a title");
const instructions = client.getInstructions() ?? "";
for (const name of ["everything", "time"]) {
  assert.ok(instructions.includes(`\n- ${name}`), `instructions name ${name}:\n${instructions}`);
}
console.log("servers in instructions: ok");

const { tools } = await client.listTools();
assert.deepEqual(tools.map((t) => t.name), ["run_python"]);
assert.ok(tools[0].outputSchema, "run_python has an outputSchema");
assert.ok(client.getToolOutputValidator("run_python"), "the SDK compiled a validator for it");
console.log("output schema: ok");

const run = (args, options) => client.callTool({ name: "run_python", arguments: args }, undefined, options);

// Every status a client receives, each validated by the SDK.
const cases = [
  ["success", { code: "x = 41\nprint(await mcp_everything.echo(message='from ts'))", servers: ["everything"] }],
  ["error", { code: "1/0" }],
  ["timeout", { code: "while True: pass", timeout: 1 }],
  ["validation_error", { code: "print(1)", unknown: 1 }],
];
for (const [status, args] of cases) {
  const result = await run(args);
  assert.equal(result.structuredContent?.status, status, JSON.stringify(result));
  assert.equal(Boolean(result.isError), status !== "success");
  console.log(`${status}: valid`);
}

// A cell's last value: shown, and its JSON as `result` (validated above too).
const shown = await run({ code: "{'n': x + 1, 'tags': ['a'], 'ok': True}" });
assert.deepEqual(shown.structuredContent?.result, { n: 42, tags: ["a"], ok: true }, JSON.stringify(shown));
assert.equal(shown.structuredContent?.display, "{'n': 42, 'tags': ['a'], 'ok': True}");
console.log("result: valid");

// Progress: output streams as notifications while the cell runs.
const messages = [];
const streamed = await run(
  { code: "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.3)" },
  { onprogress: (p) => messages.push(p.message ?? "") },
);
assert.equal(streamed.structuredContent.stdout, "tick 0\ntick 1\ntick 2\n");
assert.ok(messages.some((m) => m.includes("tick")), `progress messages: ${JSON.stringify(messages)}`);
console.log(`progress: ${messages.length} notifications`);

// Cancellation through an AbortSignal stops the cell and keeps the session.
const controller = new AbortController();
const started = Date.now();
const long = run({ code: "import time\ntime.sleep(60)" }, { signal: controller.signal });
setTimeout(() => controller.abort("the user pressed stop"), 1000);
await assert.rejects(long, "the aborted call rejects");
const after = await run({ code: "print(x + 1)" });
assert.equal(after.structuredContent.stdout, "42\n", JSON.stringify(after));
const took = Date.now() - started;
assert.ok(took < 20000, `the session answered ${took} ms after the abort`);
console.log("cancel: state kept");

// The manual as a resource.
const { resources } = await client.listResources();
assert.deepEqual(resources.map((r) => r.uri), ["resource://codemode/manual"]);
const manual = await client.readResource({ uri: "resource://codemode/manual" });
assert.ok(manual.contents[0].text.includes("keep_processes"), "the manual is current");
console.log("resources: ok");

await client.close();
console.log("all checks passed");
