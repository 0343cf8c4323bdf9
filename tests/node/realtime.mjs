// The official openai package's GA realtime client (OpenAIRealtimeWS, Node `ws`; it always dials
// wss://, so voiced serves TLS with a test CA given through NODE_EXTRA_CA_CERTS).
// Usage: VOICED_BASE_URL=https://host:port/v1 VOICED_JWT=<principal JWT> node realtime.mjs <speech.pcm>
// speech.pcm is PCM16LE mono 24 kHz real speech. Mints a key via client.realtime.clientSecrets,
// runs a text turn and a server_vad audio turn, prints one JSON line per turn and exits 0.
import fs from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

const baseURL = process.env.VOICED_BASE_URL;
const minter = new OpenAI({ baseURL, apiKey: process.env.VOICED_JWT, maxRetries: 0 });
const secret = await minter.realtime.clientSecrets.create({
  expires_after: { anchor: 'created_at', seconds: 60 },
  session: { type: 'realtime', model: 'gpt-realtime' },
});
if (!secret.value?.startsWith('ek_')) throw new Error(`client secret ${JSON.stringify(secret)}`);

const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime' }, new OpenAI({ baseURL, apiKey: secret.value, maxRetries: 0 }));
const seen = [];
const waiters = [];
rt.on('event', (ev) => {
  seen.push(ev);
  for (const w of [...waiters]) if (w.match(ev)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(ev); }
});
rt.on('error', (err) => { console.error('realtime error:', err?.message ?? err, JSON.stringify(err?.error ?? '')); process.exit(2); });
const waitFor = (match) => new Promise((resolve) => {
  const found = seen.find(match);
  if (found) { seen.splice(0, seen.indexOf(found) + 1); return resolve(found); }
  waiters.push({ match, resolve: (ev) => { seen.splice(0, seen.indexOf(ev) + 1); resolve(ev); } });
});
const timer = setTimeout(() => { console.error('timeout; last events:', seen.slice(-20).map((e) => e.type)); process.exit(3); }, 60000);

await waitFor((e) => e.type === 'session.created');
rt.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['audio'],
  audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad' } },
           output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'alloy' } } } });
await waitFor((e) => e.type === 'session.updated');

async function turn(name, start) {
  let audio = 0, transcript = '';
  let cancelled = 0;
  const onEvent = (ev) => {
    // server_vad may end a turn at a pause in the recording and cancel that reply when the
    // speech resumes (barge-in): the turn's answer is the response that completes.
    if (ev.type === 'response.created') { audio = 0; transcript = ''; }
    if (ev.type === 'response.done' && ev.response.status !== 'completed') cancelled++;
    if (ev.type === 'response.output_audio.delta') audio += Buffer.from(ev.delta, 'base64').length / 2;
    if (ev.type === 'response.output_audio_transcript.delta') transcript += ev.delta;
  };
  rt.on('event', onEvent);
  start();
  const done = await waitFor((e) => e.type === 'response.done' && e.response.status === 'completed');
  rt.off('event', onEvent);
  console.log(JSON.stringify({ turn: name, status: done.response.status, samples: audio, transcript, cancelled }));
}

await turn('text', () => {
  rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello from node.' }] } });
  rt.send({ type: 'response.create' });
});
const pcm = fs.readFileSync(process.argv[2]);
await turn('audio', () => {
  for (let i = 0; i < pcm.length; i += 9600) {
    rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(i, i + 9600).toString('base64') });
  }
});
clearTimeout(timer);
rt.close();
