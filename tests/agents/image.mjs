// The OpenAI Agents SDK's WebSocket transport in Node, unchanged: session.addImage(dataUrl) with
// its default triggerResponse. voiced takes the input_image item, the mind (the Go test's stand-in
// chat server) receives it as an image part and answers. tests/mcp_test.go runs this; prints one
// JSON line.
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';

const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const state = { errors: [], reply: '', history: [] };
const transport = new OpenAIRealtimeWebSocket({ url: process.env.VOICED_WS_URL });
const session = new RealtimeSession(new RealtimeAgent({ name: 'viewer', instructions: 'Describe images.' }), {
  transport,
  model: 'gpt-realtime',
});
session.on('error', (e) => state.errors.push(String(e?.error?.error?.message ?? e?.error?.message ?? e?.error ?? e)));
const done = new Promise((resolve) => {
  session.on('history_updated', (history) => {
    state.history = history.map((i) => ({ type: i.type, role: i.role, content: (i.content ?? []).map((c) => c.type) }));
    for (const item of history) {
      if (item.type === 'message' && item.role === 'assistant' && item.status === 'completed') {
        state.reply = (item.content ?? []).map((c) => c.transcript ?? c.text ?? '').join(' ');
        resolve();
      }
    }
  });
});
try {
  await session.connect({ apiKey: process.env.VOICED_JWT });
  session.addImage(process.env.IMAGE_DATA_URL);
  await Promise.race([done, new Promise((r) => setTimeout(r, 40000))]);
} catch (e) {
  state.errors.push(`run: ${e?.message ?? e}`);
} finally {
  out(state);
  session.close();
  process.exit(0);
}
