// The official openai package's realtime clients in transcription sessions (issue 20), over TLS
// as realtime.mjs: (1) GA, a key from client.realtime.clientSecrets.create with session.type
// "transcription", OpenAIRealtimeWS, then a session.update of the same type; (2) beta, a key from
// client.beta.realtime.transcriptionSessions.create, the beta OpenAIRealtimeWS and a
// transcription_session.update; (3) beta over ?intent=transcription (see below for how the package is
// made to send it). Each streams speech.pcm (PCM16LE mono 24 kHz) and waits for the
// turn's completed transcript; then sends response.create and expects its refusal by name.
// Usage: VOICED_BASE_URL=https://host:port/v1 VOICED_JWT=<principal JWT> node transcription.mjs <speech.pcm>
// Prints one JSON line per session: {dialect, created, updated, deltas, completed, transcripts,
// responses, refusal} and exits 0.
import fs from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { OpenAIRealtimeWS as BetaRealtimeWS } from 'openai/beta/realtime/ws';

const baseURL = process.env.VOICED_BASE_URL;
const minter = new OpenAI({ baseURL, apiKey: process.env.VOICED_JWT, maxRetries: 0 });
const pcm = fs.readFileSync(process.argv[2]);
const timer = setTimeout(() => { console.error('timeout'); process.exit(3); }, 80000);

async function run(dialect, rt, update) {
  const seen = [];
  const waiters = [];
  rt.on('event', (ev) => {
    seen.push(ev);
    for (const w of [...waiters]) if (w.match(ev)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(ev); }
  });
  // The refusal of response.create arrives as an error event: the client emits 'error' for it.
  const errors = [];
  rt.on('error', (err) => { errors.push(err?.error ?? { message: String(err?.message ?? err) }); });
  const waitFor = (match) => new Promise((resolve) => {
    const found = seen.find(match);
    if (found) return resolve(found);
    waiters.push({ match, resolve });
  });
  const created = await waitFor((e) => e.type === 'session.created' || e.type === 'transcription_session.created');
  rt.send(update);
  const updated = await waitFor((e) => e.type === 'session.updated' || e.type === 'transcription_session.updated');
  for (let i = 0; i < pcm.length; i += 4800) {
    rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(i, i + 4800).toString('base64') });
    await new Promise((r) => setTimeout(r, 5));
  }
  const completed = await waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
  rt.send({ type: 'response.create', event_id: 'ev_no_answer' });
  const refusal = await waitFor((e) => e.type === 'error' && e.error?.event_id === 'ev_no_answer');
  await new Promise((r) => setTimeout(r, 300));
  rt.close();
  const done = seen.filter((e) => e.type === 'conversation.item.input_audio_transcription.completed');
  console.log(JSON.stringify({
    dialect, created: created.type, createdSession: created.session, updated: updated.type,
    deltas: seen.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta').map((e) => e.delta),
    completed: seen.filter((e) => e.type === 'conversation.item.input_audio_transcription.completed').length,
    transcripts: seen.filter((e) => e.type === 'conversation.item.input_audio_transcription.completed').map((e) => e.transcript),
    responses: seen.filter((e) => e.type.startsWith('response.')).map((e) => e.type),
    refusal: refusal.error.code, errors: errors.length,
    logprobs: done.some((e) => e.logprobs) ? done.flatMap((e) => e.logprobs ?? []) : null,
    deltaLogprobs: seen.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta').map((e) => e.logprobs ?? null),
  }));
}

// GA.
const ga = await minter.realtime.clientSecrets.create({
  expires_after: { anchor: 'created_at', seconds: 60 },
  session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 },
    transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: { type: 'server_vad' } } } },
});
if (!ga.value?.startsWith('ek_') || ga.session?.type !== 'transcription') throw new Error(`client secret ${JSON.stringify(ga)}`);
await run('ga', new OpenAIRealtimeWS({ model: 'gpt-4o-transcribe' }, new OpenAI({ baseURL, apiKey: ga.value, maxRetries: 0 })), {
  type: 'session.update', session: { type: 'transcription', audio: { input: {
    transcription: { model: 'gpt-4o-transcribe', prompt: 'captions' }, noise_reduction: { type: 'near_field' },
    turn_detection: { type: 'server_vad', silence_duration_ms: 500 } } }, include: ['item.input_audio_transcription.logprobs'] },
});

// Beta.
const beta = await minter.beta.realtime.transcriptionSessions.create({
  input_audio_format: 'pcm16', input_audio_transcription: { model: 'whisper-1', language: 'en' },
  turn_detection: { type: 'server_vad', silence_duration_ms: 500 },
});
if (!beta.client_secret?.value?.startsWith('ek_')) throw new Error(`transcription session ${JSON.stringify(beta)}`);
await run('beta', new BetaRealtimeWS({ model: 'gpt-4o-transcribe' }, new OpenAI({ baseURL, apiKey: beta.client_secret.value, maxRetries: 0 })), {
  type: 'transcription_session.update', session: { input_audio_transcription: { model: 'whisper-1', prompt: 'captions' },
    turn_detection: { type: 'server_vad', silence_duration_ms: 500 } },
});

// Beta, ?intent=transcription with the principal's own JWT: the package builds the socket's URL as
// baseURL + "/realtime" and then sets ?model=, with no option for other query parameters, so the
// intent rides in baseURL itself: ".../v1/realtime?intent=transcription&_=" gives the path
// /v1/realtime and the query intent=transcription&_=/realtime&model=… (voiced ignores "_").
const intentBase = `${baseURL}/realtime?intent=transcription&_=`;
await run('intent', new BetaRealtimeWS({ model: 'gpt-4o-transcribe' }, new OpenAI({ baseURL: intentBase, apiKey: process.env.VOICED_JWT, maxRetries: 0 })), {
  type: 'transcription_session.update', session: { input_audio_transcription: { model: 'whisper-1', language: 'en' },
    turn_detection: { type: 'server_vad', silence_duration_ms: 500 }, include: ['item.input_audio_transcription.logprobs'] },
});
clearTimeout(timer);
