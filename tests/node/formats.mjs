// The official openai package against voiced's audio formats (issue 28).
// Usage: VOICED_BASE_URL=http://host:port/v1 VOICED_API_KEY=<token> node formats.mjs <out dir> "<text>" [upload files…]
// Speaks <text> with audio.speech.create in every response_format (and none: OpenAI's default)
// into <out dir>, reads stream_format "sse" with the SDK's own SSE parser (Stream.fromSSEResponse),
// then transcribes each upload file with audio.transcriptions.create under the name upload.bin.
// Prints one JSON line: {"speech": {name: file}, "sse": {events, deltas, audio: file}, "uploads": {file: {text} | {status, code}}}.
import fs from 'node:fs/promises';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { Stream } from 'openai/core/streaming';

const client = new OpenAI({ baseURL: process.env.VOICED_BASE_URL, apiKey: process.env.VOICED_API_KEY, maxRetries: 0 });
const [outDir, input, ...uploads] = process.argv.slice(2);

const speech = {};
for (const format of [undefined, 'mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']) {
  const params = { model: 'gpt-4o-mini-tts', voice: 'alloy', input };
  if (format) params.response_format = format;
  const resp = await client.audio.speech.create(params);
  const file = path.join(outDir, `speech-${format ?? 'default'}`);
  await fs.writeFile(file, Buffer.from(await resp.arrayBuffer()));
  speech[format ?? 'default'] = { file, contentType: resp.headers.get('content-type') };
}

const sseResp = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input, stream_format: 'sse' });
const events = [];
const chunks = [];
for await (const ev of Stream.fromSSEResponse(sseResp, new AbortController())) {
  events.push(ev.type);
  if (ev.type === 'speech.audio.delta') chunks.push(Buffer.from(ev.audio, 'base64'));
}
const sseFile = path.join(outDir, 'speech-sse.mp3');
await fs.writeFile(sseFile, Buffer.concat(chunks));

const results = {};
for (const file of uploads) {
  try {
    const t = await client.audio.transcriptions.create({ file: await toFile(await fs.readFile(file), 'upload.bin'), model: 'whisper-1' });
    results[file] = { text: t.text };
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    results[file] = { status: err.status, code: err.code };
  }
}
console.log(JSON.stringify({ speech, sse: { events: [...new Set(events)], deltas: chunks.length, file: sseFile }, uploads: results }));
