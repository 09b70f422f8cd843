// The official OpenAI Node client against `llmbench serve` (driven by tests/cli/serve_openai.sh).
//   node openai_client.mjs BASE_URL MODEL api PROMPT N      → checks the API, prints {"completion": text, …}
//   node openai_client.mjs BASE_URL MODEL streams FILE N    → one stream per id prompt in FILE (JSON), all at
//                                                             once; prints the texts as a JSON list
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const [base, model, mode, arg, n] = process.argv.slice(2);
const maxTokens = Number(n);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const greedy = { model, max_tokens: maxTokens, temperature: 0, ignore_eos: true };

async function streamText(stream, field) {
  let text = '';
  let finish = null, usage = null, timing = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    if (chunk.llmbench_timing) timing = chunk.llmbench_timing;
    for (const choice of chunk.choices) {
      text += field(choice) ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage, timing, chunks };
}

async function api(prompt) {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, [model]);

  // Completions, not streamed: text, usage, and the stage timings in Server-Timing.
  const { data: c, response } = await client.completions.create({ ...greedy, prompt }).withResponse();
  assert.equal(c.object, 'text_completion');
  assert.equal(c.choices[0].finish_reason, 'length');
  assert.equal(c.usage.completion_tokens, maxTokens);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + maxTokens);
  const timing = response.headers.get('server-timing');
  for (const stage of ['http_recv', 'queue', 'tokenize', 'prefill', 'decode', 'stream'])
    assert.match(timing, new RegExp(`${stage};dur=[0-9.]+`), timing);

  // Streamed: the same greedy text, usage in the last chunk, timings in it too.
  const s = await streamText(
    await client.completions.create({ ...greedy, prompt, stream: true, stream_options: { include_usage: true } }),
    (choice) => choice.text);
  assert.equal(s.text, c.choices[0].text);
  assert.equal(s.finish, 'length');
  assert.equal(s.usage.completion_tokens, maxTokens);
  assert.ok(s.chunks >= 2, `${s.chunks} chunks`);
  assert.equal(typeof s.timing.decode_ms, 'number');

  // Chat, both ways.
  const messages = [{ role: 'user', content: prompt }];  // as `llmbench generate --chat` wraps it
  const chat = await client.chat.completions.create({ ...greedy, messages });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.role, 'assistant');
  const cs = await streamText(await client.chat.completions.create({ ...greedy, messages, stream: true }),
    (choice) => choice.delta.content);
  assert.equal(cs.text, chat.choices[0].message.content);
  assert.equal(cs.finish, 'length');

  // A stop string taken from the greedy text ends it there.
  const full = c.choices[0].text;
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 2);
  if (stop.trim().length === 2) {
    const st = await client.completions.create({ ...greedy, prompt, stop: [stop] });
    assert.equal(st.choices[0].text, full.slice(0, full.indexOf(stop)));
    assert.equal(st.choices[0].finish_reason, 'stop');
  }

  // Errors arrive as the client's typed errors.
  await assert.rejects(client.completions.create({ ...greedy, model: 'no-such-model', prompt }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(client.completions.create({ ...greedy, prompt, max_tokens: 0 }),
    (e) => e instanceof OpenAI.BadRequestError);
  await assert.rejects(client.completions.create({ ...greedy, prompt, n: 2 }), (e) => e.status === 400);

  console.log(JSON.stringify({ completion: full, chat: chat.choices[0].message.content }));
}

async function streams(file) {
  const prompts = JSON.parse((await import('node:fs')).readFileSync(file, 'utf8'));
  const texts = await Promise.all(prompts.map(async (prompt) => {
    const s = await streamText(await client.completions.create({ ...greedy, prompt, stream: true }), (c) => c.text);
    assert.equal(s.finish, 'length');
    return s.text;
  }));
  console.log(JSON.stringify(texts));
}

if (mode === 'api') await api(arg);
else if (mode === 'streams') await streams(arg);
else throw new Error(`unknown mode ${mode}`);
