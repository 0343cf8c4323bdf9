// LiveKit Agents' OpenAI realtime plugin, unchanged, pointed at voiced: a RealtimeSession (no
// room: the plugin's own session API), a user message through updateChatCtx, then generateReply().
// The plugin sends response.create with metadata.client_event_id and resolves generateReply only
// when response.created carries that id back (else "generateReply timed out." after 10 s).
// Prints one JSON line: {"resolved":true,"ms":…,"text":…} or {"error":…}.
import { initializeLogger, llm } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';

initializeLogger({ pretty: false, level: 'warn' });

const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const model = new openai.realtime.RealtimeModel({
  baseURL: process.env.VOICED_BASE_URL,
  apiKey: process.env.VOICED_JWT,
  model: 'gpt-realtime',
  modalities: ['text'],
  turnDetection: null,
});
const session = model.session();
session.on('error', (e) => out({ sessionError: String(e?.error?.message ?? e?.error ?? e) }));
try {
  const ctx = llm.ChatContext.empty();
  ctx.addMessage({ role: 'user', content: 'Hello from LiveKit.' });
  await session.updateChatCtx(ctx);
  const started = Date.now();
  const gen = await session.generateReply();
  const ms = Date.now() - started;
  let text = '';
  const reader = gen.messageStream.getReader();
  for (;;) {
    const { value: msg, done } = await reader.read();
    if (done) break;
    const tr = msg.textStream.getReader();
    for (;;) {
      const { value, done: d } = await tr.read();
      if (d) break;
      text += value;
    }
  }
  out({ resolved: true, ms, text });
} catch (e) {
  out({ error: String(e?.message ?? e) });
} finally {
  await session.close();
  await model.close?.();
  process.exit(0);
}
