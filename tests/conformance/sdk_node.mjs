// Feed SSE streams to the official Node SDKs' stream helpers and print what each did.
// usage: node sdk_node.mjs <cases.json>, where the file holds [[kind, stream file, request], ...], kind
// is anthropic, chat or responses and request (or null) holds fields added to the helper's params. Prints one JSON line per case, in order:
// {"ok": true, "final": <the final object>} or {"ok": false, "error": <class name>, "message": <message>}.
import { readFileSync } from "node:fs";
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
      .stream({ model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }] })
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

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
for (const [kind, file, request] of cases) {
  let line;
  try {
    const final = await run(kind, readFileSync(file), request ?? {});
    line = { ok: true, final };
  } catch (err) {
    line = { ok: false, error: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err) };
  }
  console.log(JSON.stringify(line));
}
