// Feed SSE streams to the official Node SDKs' stream helpers and print what each did.
// usage: node sdk_node.mjs <cases.json>, where the file holds [[kind, stream file, request], ...], kind
// is anthropic, chat or responses and request (or null) holds fields added to the helper's params. Prints one JSON line per case, in order:
// {"ok": true, "final": <the final object>} or {"ok": false, "error": <class name>, "message": <message>}.
// node sdk_node.mjs --serve: reads one case a line on stdin, {"kind": kind, "chunks": [base64, ...]}
// (the stream in the pieces the body delivers), and answers each with one such line, until stdin ends.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const prefix = process.env.PROXAI_NODE_SDKS || join(here, "..", "..", ".ci", "node-sdks");
const require = createRequire(join(prefix, "package.json"));
const Anthropic = require("@anthropic-ai/sdk").default;
const OpenAI = require("openai").default;

async function run(kind, body, request) {
  // The SDK's own HTTP path, with a fetch that answers with the stream's bytes.
  const fetch = async () =>
    new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  if (kind === "anthropic") {
    const client = new Anthropic({ apiKey: "x", fetch, maxRetries: 0 });
    return client.messages
      .stream({ model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }], ...request })
      .finalMessage();
  }
  const client = new OpenAI({ apiKey: "x", fetch, maxRetries: 0 });
  if (kind === "chat") {
    return client.chat.completions
      .stream({ model: "m", messages: [{ role: "user", content: "hi" }], ...request })
      .finalChatCompletion();
  }
  return client.responses.stream({ model: "m", input: "hi", ...request }).finalResponse();
}

// the final object with what lies deeper than 1,000 levels as a string (Python's json module, which
// reads these lines, stops at about 1,500: a strict tool's arguments parsed deeper than that)
function shallow(v, depth = 0) {
  if (v === null || typeof v !== "object") return v;
  if (depth >= 1000) return "(deeper than 1000 levels)";
  if (Array.isArray(v)) return v.map((x) => shallow(x, depth + 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shallow(x, depth + 1)]));
}

async function react(kind, body, request) {
  try {
    // read whole here: a lazy field of the final object (a tool's input) may throw when read
    return { ok: true, final: shallow(JSON.parse(JSON.stringify(await run(kind, body, request ?? {})))) };
  } catch (err) {
    return { ok: false, error: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err) };
  }
}

function pieces(chunks) {
  // a body that delivers the stream in exactly these pieces
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(new Uint8Array(Buffer.from(c, "base64")));
      controller.close();
    },
  });
}

if (process.argv[2] === "--serve") {
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    const { kind, chunks } = JSON.parse(line);
    process.stdout.write(JSON.stringify(await react(kind, pieces(chunks))) + "\n");
  }
} else {
  const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
  for (const [kind, file, request] of cases) {
    console.log(JSON.stringify(await react(kind, readFileSync(file), request)));
  }
}
