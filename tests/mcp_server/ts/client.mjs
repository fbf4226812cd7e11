// The official TypeScript MCP SDK client (1.x) against `toolbound serve`.
//
// Run by test_ts_client.py: `node client.mjs CONFIG_JSON`, where CONFIG_JSON is
// {"transport": "stdio", "command", "args", "env"} or {"transport": "http", "url", "token"},
// plus "rel" (this run's folder in the workspace, holding a.txt) and "waitMs".
// Every check runs in this one process; it prints one JSON document of what it saw
// (the Python test asserts on it) and exits 0, or prints the error and exits 1.
// `callTool` validates structuredContent against the tool's outputSchema, errors
// included: a mismatch throws -32602, recorded as "thrown" (`serve --structured`;
// by default a result is its text only, with neither).

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(process.argv[2]);
const { rel, waitMs } = config;

function transport() {
  if (config.transport === "stdio") {
    return new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      stderr: "inherit",
    });
  }
  return new StreamableHTTPClientTransport(new URL(config.url), {
    requestInit: { headers: { Authorization: `Bearer ${config.token}` } },
  });
}

// A call's outcome: what the client returned, or the message it threw.
async function outcome(promise) {
  try {
    const result = await promise;
    const text = result.content
      .filter((block) => block.type === "text")
      .map((block) => block.text)
      .join("");
    return { isError: result.isError ?? false, structuredContent: result.structuredContent, text };
  } catch (err) {
    return { thrown: `${err.code ?? ""} ${err.message}` };
  }
}

// Poll `predicate` every 20 ms; throw after waitMs.
async function waitUntil(predicate, what) {
  const deadline = Date.now() + waitMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function pidIn(name) {
  const path = join(config.workspace, rel, name);
  if (!existsSync(path)) return null;
  const text = readFileSync(path, "utf8").trim();
  return text ? Number(text) : null;
}

const CALLS = {
  Read: [{ path: `${rel}/a.txt` }, { path: `${rel}/missing.txt` }],
  Glob: [{ pattern: "*.txt", path: rel }, { pattern: "*", limit: 0 }],
  Grep: [{ pattern: "hello", path: rel }, { pattern: "(" }],
  Bash: [{ command: "echo hi" }, { command: "echo hi", timeout: 0 }],
  // After Read's success above (the file was Read in this session).
  Edit: [
    { path: `${rel}/a.txt`, oldString: "hello\n", newString: "hello\nworld\n" },
    { path: `${rel}/a.txt`, oldString: "absent", newString: "x" },
  ],
  Write: [{ path: `${rel}/new/b.txt`, content: "b\n" }, { path: "../b.txt", content: "b\n" }],
  JobOutput: [{}, { jobId: "job_nope" }],
};

async function main() {
  const client = new Client({ name: "toolbound-ts-test", version: "0" });
  await client.connect(transport());
  const report = {};
  try {
    // tools/list also caches the output schemas callTool validates against.
    const listed = (await client.listTools()).tools;
    report.tools = listed.map((t) => t.name);
    report.outputSchemas = listed.filter((t) => t.outputSchema !== undefined).length;

    report.calls = {};
    for (const [name, [good, bad]] of Object.entries(CALLS)) {
      report.calls[name] = {
        success: await outcome(client.callTool({ name, arguments: good })),
        error: await outcome(client.callTool({ name, arguments: bad })),
      };
    }
    // A background job: started, waited on, stopped; each result validated by the client.
    const started = await outcome(
      client.callTool({
        name: "Bash",
        arguments: { command: "echo up; sleep 300", background: true },
      }),
    );
    const jobId = started.structuredContent?.jobId ?? /^\[job (\S+) started/.exec(started.text)?.[1];
    report.job = {
      started,
      output: await outcome(
        client.callTool({ name: "JobOutput", arguments: { jobId, until: "^up$", waitS: 30 } }),
      ),
      stopped: await outcome(client.callTool({ name: "JobStop", arguments: { jobId } })),
      missing: await outcome(client.callTool({ name: "JobStop", arguments: { jobId: "job_nope" } })),
    };

    report.timeout = await outcome(
      client.callTool({ name: "Bash", arguments: { command: "echo started; sleep 30", timeout: 1 } }),
    );

    // The chunks go out before the command's last half second, so none trails the result.
    const progress = [];
    const streamed = await outcome(
      client.callTool(
        { name: "Bash", arguments: { command: "echo one; echo two >&2; sleep 0.5" } },
        undefined,
        { onprogress: (p) => progress.push({ progress: p.progress, message: p.message }) },
      ),
    );
    report.progress = { result: streamed, notifications: progress };

    const command = `sleep 300 & echo $! > ${rel}/child.pid; echo $$ > ${rel}/shell.pid; wait`;
    const controller = new AbortController();
    const hung = outcome(
      client.callTool({ name: "Bash", arguments: { command, timeout: 300 } }, undefined, {
        signal: controller.signal,
      }),
    );
    await waitUntil(() => pidIn("shell.pid") !== null && pidIn("child.pid") !== null, "the pids");
    const pids = [pidIn("shell.pid"), pidIn("child.pid")];
    controller.abort();
    const cancelled = await hung;
    await waitUntil(() => !pids.some(alive), "the cancelled process tree to be gone");
    report.cancel = {
      cancelled: "thrown" in cancelled,
      gone: !pids.some(alive),
      after: await outcome(client.callTool({ name: "Bash", arguments: { command: "echo still here" } })),
    };
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exit(1);
  },
);
