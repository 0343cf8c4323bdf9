// The OpenAI Agents SDK's browser path, unchanged, pointed at voiced: a RealtimeSession with a
// RealtimeAgent over OpenAIRealtimeWebRTC (its default browser transport), the microphone from
// getUserMedia, the reply on the SDK's own <audio> element. cmd/voiced/agents_chromium_test.go
// bundles this file with esbuild (IIFE, platform browser) and opens it in headless Chromium.
//
// The page's URL names voiced's calls route (?calls=…); the ephemeral key comes from the page's
// own server (GET /ek), which mints it from voiced's /v1/realtime/client_secrets with a
// principal JWT, as an app's backend does. What the page saw is on window.agentsEvents (every
// server event the transport parsed, in order) and window.agentsState.
import { OpenAIRealtimeWebRTC, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';

const params = new URLSearchParams(location.search);
const events = [];
const state = {
  phase: 'starting',
  callId: null,
  transport: null,
  keyPrefix: null,
  connection: [],
  errors: [],
  history: [],
};
window.agentsEvents = events;
window.agentsState = state;

const transport = new OpenAIRealtimeWebRTC({ baseUrl: params.get('calls') });
const agent = new RealtimeAgent({
  name: 'voiced-agents-test',
  instructions: 'Repeat what the user says.',
});
const session = new RealtimeSession(agent, { transport });
state.transport = session.transport.constructor.name;

const describe = (e) => {
  const err = e?.error ?? e;
  if (err?.error?.message) return `${err.error.code ?? err.error.type}: ${err.error.message}`;
  if (err?.message) return String(err.message);
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
};

transport.on('*', (ev) => events.push(ev));
transport.on('connection_change', (s) => state.connection.push(s));
session.on('error', (e) => state.errors.push(describe(e)));
session.on('history_updated', (h) => {
  state.history = h.map((item) => ({
    type: item.type,
    role: item.role,
    status: item.status,
    text: (item.content ?? []).map((c) => c.transcript ?? c.text ?? '').join(' '),
  }));
});

// stats reads the peer connection's RTP counters: the microphone sent, the reply received.
window.agentsStats = async () => {
  const pc = transport.connectionState.peerConnection;
  if (!pc) return { state: 'none' };
  const out = { state: pc.connectionState };
  (await pc.getStats()).forEach((r) => {
    if (r.type === 'outbound-rtp' && r.kind === 'audio') {
      out.sentPackets = r.packetsSent;
    }
    if (r.type === 'inbound-rtp' && r.kind === 'audio') {
      out.receivedPackets = r.packetsReceived;
      out.receivedEnergy = r.totalAudioEnergy;
      out.receivedSeconds = r.totalSamplesDuration;
      out.codec = r.codecId;
    }
    if (r.type === 'codec') {
      (out.codecs ??= []).push(r.mimeType);
    }
  });
  return out;
};

window.agentsHangUp = () => session.close();

session
  .connect({
    apiKey: async () => {
      const r = await fetch('/ek');
      if (!r.ok) throw new Error(`GET /ek: ${r.status} ${await r.text()}`);
      const key = await r.text();
      state.keyPrefix = key.slice(0, 3);
      return key;
    },
  })
  .then(
    () => {
      state.phase = 'connected';
      state.callId = transport.callId ?? null;
    },
    (e) => {
      state.phase = 'failed';
      state.errors.push(`connect: ${describe(e)}`);
    },
  );
