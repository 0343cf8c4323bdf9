// voiced's browser page: microphone → a WebRTC call (POST /v1/realtime/calls, Opus tracks, events on
// the "oai-events" data channel) or the realtime socket (/v1/voice, GA dialect, pcm16 in events) →
// speaker, with the live transcript and latency figures. Plain JS, no build step, nothing fetched from elsewhere.
"use strict";

(() => {
  const RATE = 24000; // pcm16 both ways
  const CHUNK_SAMPLES = 960; // 40 ms per input_audio_buffer.append
  const JITTER_S = 0.06; // lead given to the first chunk after silence, so later chunks queue behind it
  const MAX_BUFFERED = 1 << 20; // bytes the socket may hold before microphone chunks are dropped
  const FIGURES = ["stopToAudio", "stopToSound", "stopToTranscript", "stopToReplyText"];
  const GATHER_MS = 3000; // longest wait for ICE candidates before the offer is posted anyway
  const STATS_MS = 500; // how often the WebRTC call's inbound audio is counted

  const $ = (id) => document.getElementById(id);

  // What happened, for people (the panels) and for the tests (window.voicedPage).
  const state = {
    phase: "idle", // idle | ticket | connecting | open | closed | failed
    transport: null, // webrtc | websocket
    callId: null, // WebRTC: the call id from the answer's Location
    inbound: null, // WebRTC: the remote track's inbound-rtp {bytes, packets, energy, seconds} (getStats)
    bufferCleared: [], // WebRTC: ms from speech_started to output_audio_buffer.cleared (barge-in)
    audioStopped: [], // WebRTC: ms from a barge-in's speech_started to the reply's sound gone (getStats)
    rtpStopped: [], // WebRTC: ms from a barge-in's speech_started to the reply's packets gone (getStats bytes/packet)
    sessionId: null,
    events: {}, // server event type → count
    sentAppends: 0,
    sentSamples: 0,
    droppedChunks: 0,
    receivedSamples: 0,
    truncations: [], // {item_id, audio_end_ms}
    speech: [], // {item_id, start_ms, end_ms}: the server's turn detection, in its audio clock
    mode: null, // talk | captions (a transcription session: it never answers)
    sessionType: null, // the session object's type (GA): realtime | transcription
    captions: [], // captions mode: {item_id, start_ms, end_ms, text} per completed turn
    errors: [], // {code, message}
    sentFrames: 0, // camera frames sent (input_video_buffer.append)
    latency: Object.fromEntries(FIGURES.map((f) => [f, []])), // ms per turn
    close: null, // {code, reason}
  };
  window.voicedPage = state;

  let ws = null;
  let pc = null; // RTCPeerConnection (WebRTC)
  let dc = null; // its "oai-events" data channel
  let statsTimer = 0;
  let speechAt = 0; // performance.now() of the last speech_started
  let replyOnTrack = false; // WebRTC: between output_audio_buffer.started and .stopped/.cleared
  let replyRate = 0; // WebRTC: the reply's sound, totalAudioEnergy per second while it played
  let replyBytes = 0; // WebRTC: the reply's Opus bytes per packet while it played
  let lastInbound = null; // {at, energy}: countInbound's previous reading
  let ctx = null; // the AudioContext: microphone in, speaker out
  let mic = null; // MediaStream
  let capture = null; // AudioWorkletNode
  let player = null;
  let sending = false;
  let turn = null; // {stoppedAt, item_id, seen:{figure:true}}
  const lines = new Map(); // item_id → transcript line
  let camera = null; // {stream, video, canvas, timer}: the camera while the toggle is on

  // Kokoro v1.0's voices by the language their name's prefix says (a American, b British English,
  // e Spanish, f French, i Italian, p Brazilian Portuguese, h Hindi); picking a language offers its
  // voices and picks the first. Japanese (j) and Mandarin (z) voices are not served here.
  const voicesOf = {
    en: ["af_heart", "af_bella", "af_nicole", "af_sarah", "am_adam", "am_michael", "bf_emma", "bm_george"],
    es: ["ef_dora", "em_alex", "em_santa"],
    fr: ["ff_siwis"],
    it: ["if_sara", "im_nicola"],
    pt: ["pf_dora", "pm_alex", "pm_santa"],
    hi: ["hf_alpha", "hf_beta", "hm_omega", "hm_psi"],
  };
  $("language").addEventListener("change", () => {
    const voices = voicesOf[$("language").value];
    if (!voices) return;
    const list = $("voices");
    list.replaceChildren(...voices.concat(["alloy"]).map((v) => Object.assign(document.createElement("option"), { value: v })));
    $("voice").value = voices[0];
  });

  // ---- the panels ----

  function setPhase(phase, text) {
    state.phase = phase;
    const s = $("status");
    s.className = "status " + ({ ticket: "busy", connecting: "busy" }[phase] || phase);
    s.textContent = text || phase;
    const live = phase === "ticket" || phase === "connecting" || phase === "open";
    $("connect").disabled = live;
    $("hangup").disabled = !live;
  }

  function showError(code, message) {
    state.errors.push({ code, message });
    const list = $("errors");
    const none = list.querySelector(".none");
    if (none) none.remove();
    const li = document.createElement("li");
    const c = document.createElement("span");
    c.className = "code";
    c.textContent = code;
    li.append(c, " — " + message);
    list.prepend(li);
    while (list.children.length > 20) list.lastChild.remove();
  }

  function line(itemId, role) {
    let l = lines.get(itemId);
    if (l) return l;
    const li = document.createElement("li");
    li.className = role;
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = role === "user" ? "you" : "voiced";
    const text = document.createElement("span");
    text.className = "text pending";
    text.textContent = "…";
    const note = document.createElement("span");
    note.className = "note";
    li.append(who, text, note);
    const list = $("transcript");
    list.append(li);
    list.scrollTop = list.scrollHeight;
    l = { li, text, note, value: "" };
    lines.set(itemId, l);
    return l;
  }

  function setText(l, value) {
    l.value = value;
    l.text.textContent = value || "…";
    l.text.classList.toggle("pending", !value);
    const list = $("transcript");
    list.scrollTop = list.scrollHeight;
  }

  function seconds(samples) {
    return (samples / RATE).toFixed(1) + " s";
  }

  function showCounts() {
    $("sent").textContent = seconds(state.sentSamples);
    $("received").textContent = seconds(state.receivedSamples);
  }

  function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  // figure records one latency of the current turn (once per turn per figure).
  function figure(name, ms) {
    if (!turn || turn.seen[name]) return;
    turn.seen[name] = true;
    const xs = state.latency[name];
    xs.push(Math.round(ms));
    const cells = document.querySelectorAll(`#latency tr[data-figure="${name}"] td`);
    cells[0].textContent = Math.round(ms) + " ms";
    cells[1].textContent = Math.round(median(xs)) + " ms";
    cells[2].textContent = String(xs.length);
  }

  // ---- audio ----

  function base64(buffer) {
    const b = new Uint8Array(buffer);
    let s = "";
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
    return btoa(s);
  }

  function pcm16(b64) {
    const s = atob(b64);
    const out = new Int16Array(s.length >> 1);
    for (let i = 0; i < out.length; i++) {
      const v = s.charCodeAt(2 * i) | (s.charCodeAt(2 * i + 1) << 8);
      out[i] = v > 32767 ? v - 65536 : v;
    }
    return out;
  }

  // Player schedules each delta behind the last on the AudioContext clock: a small jitter queue.
  // It knows how much of each assistant item has been played, for the truncate after a barge-in.
  class Player {
    constructor(context) {
      this.ctx = context;
      this.out = context.createGain();
      this.out.connect(context.destination);
      this.sources = new Set();
      this.next = 0; // context time the next chunk starts
      this.item = null; // the assistant item being played
      this.chunks = []; // {at, samples, offset} of this.item
      this.received = 0; // samples of this.item
      this.cut = new Set(); // items stopped by a barge-in: their late deltas are not played
    }

    // push plays pcm of itemId and returns the context time it starts, or -1 when dropped.
    push(itemId, pcm) {
      if (this.cut.has(itemId) || pcm.length === 0) return -1;
      if (itemId !== this.item) {
        this.item = itemId;
        this.chunks = [];
        this.received = 0;
      }
      const buf = this.ctx.createBuffer(1, pcm.length, RATE);
      const f = buf.getChannelData(0);
      for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 32768;
      const now = this.ctx.currentTime;
      const at = this.next > now + 0.005 ? this.next : now + JITTER_S;
      const src = this.ctx.createBufferSource();
      src.buffer = buf;
      src.connect(this.out);
      src.onended = () => this.sources.delete(src);
      src.start(at);
      this.sources.add(src);
      this.chunks.push({ at, samples: pcm.length, offset: this.received });
      this.received += pcm.length;
      this.next = at + pcm.length / RATE;
      return at;
    }

    playing() {
      return this.item !== null && this.next > this.ctx.currentTime;
    }

    // played is how many samples of the current item have reached the speaker.
    played() {
      const heard = this.ctx.currentTime - (this.ctx.outputLatency || 0);
      let n = 0;
      for (const c of this.chunks) {
        if (heard <= c.at) break;
        n = c.offset + Math.min(c.samples, Math.floor((heard - c.at) * RATE));
      }
      return n;
    }

    // stop silences everything and says what of the current item was played.
    stop() {
      const item = this.item;
      const played = this.played();
      for (const s of this.sources) {
        try { s.stop(); } catch (_) { /* not started yet */ }
      }
      this.sources.clear();
      if (item) this.cut.add(item);
      this.item = null;
      this.chunks = [];
      this.next = 0;
      return { item, played };
    }
  }

  async function startMicrophone() {
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      throw pageError("microphone_unavailable", "this browser gives no microphone here: open the page over https or on localhost");
    }
    mic = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    await ctx.audioWorklet.addModule(document.body.dataset.worklet);
    capture = new AudioWorkletNode(ctx, "voiced-capture", {
      numberOfInputs: 1, numberOfOutputs: 0, channelCount: 1, channelCountMode: "explicit",
      channelInterpretation: "speakers", processorOptions: { rate: RATE, chunkSamples: CHUNK_SAMPLES },
    });
    capture.port.onmessage = (m) => {
      $("level").value = Math.min(1, m.data.rms * 4);
      if (!sending || !ws || ws.readyState !== WebSocket.OPEN) return; // WebRTC: the track carries the audio
      if (ws.bufferedAmount > MAX_BUFFERED) {
        state.droppedChunks++;
        return;
      }
      send({ type: "input_audio_buffer.append", audio: base64(m.data.pcm) });
      state.sentAppends++;
      state.sentSamples += m.data.pcm.byteLength / 2;
      showCounts();
    };
    ctx.createMediaStreamSource(mic).connect(capture);
  }

  // ---- the conversation ----

  function pageError(code, message) {
    const e = new Error(message);
    e.code = code;
    return e;
  }

  async function ticketFor(jwt) {
    const r = await fetch("/v1/voice/session", {
      method: "POST", cache: "no-store",
      headers: { Authorization: "Bearer " + jwt, "Content-Type": "application/json" },
      body: "{}",
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok || !body.ticket) {
      const err = body.error || {};
      throw pageError(body.name || err.code || "http_" + r.status, body.message || err.message || r.statusText);
    }
    return body.ticket;
  }

  function send(ev) {
    if (dc) {
      if (dc.readyState === "open") dc.send(JSON.stringify(ev));
    } else if (ws) {
      ws.send(JSON.stringify(ev));
    }
  }

  function sessionUpdate() {
    const vad = $("vad").value;
    const td = vad === "semantic_vad" ? { type: "semantic_vad", eagerness: "auto" } : { type: "server_vad" };
    const pcm = { type: "audio/pcm", rate: RATE };
    if (state.mode === "captions") {
      // A transcription session (issue 20): it hears, detects turns and transcribes them, and
      // never answers.
      return {
        type: "session.update",
        session: { type: "transcription", audio: { input: { format: pcm, turn_detection: td, transcription: { model: "whisper-1" } } } },
      };
    }
    return {
      type: "session.update",
      session: {
        type: "realtime",
        output_modalities: ["audio"],
        audio: {
          input: {
            format: pcm, turn_detection: td,
            // The language Whisper hears is the transcription's: sent whenever one is picked,
            // even with the transcript hidden.
            transcription: $("transcribe").checked || $("language").value
              ? Object.assign({ model: "whisper-1" }, $("language").value ? { language: $("language").value } : {})
              : null,
          },
          output: { format: pcm, voice: $("voice").value.trim() || "alloy" },
        },
      },
    };
  }

  function openSocket(ticket) {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(`${scheme}//${location.host}/v1/voice?ticket=${encodeURIComponent(ticket)}`, ["realtime"]);
    const sock = ws;
    sock.onopen = () => {
      setPhase("open", "connected");
      send(sessionUpdate());
      sending = true;
      startCamera();
    };
    sock.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (_) { return showError("bad_event", "the server sent a frame that is not JSON"); }
      handle(ev);
    };
    sock.onclose = (e) => {
      if (sock !== ws) return;
      state.close = { code: e.code, reason: e.reason };
      if (e.code === 1006 && state.phase === "connecting") {
        showError("handshake_refused", "the server refused the socket (1006): the ticket may be spent or expired, " +
          "the origin not allowed, the speech assets not mounted or warm, or the server full — see /health and its log");
      } else if (e.code !== 1000 && e.code !== 1005) {
        showError("socket_closed", `${e.code} ${e.reason || ""}`.trim());
      }
      hangUp(state.phase === "open" ? "closed" : "failed", `closed (${e.code})`);
    };
  }

  // ---- WebRTC ----

  // gathered resolves when the offer holds its ICE candidates (the server takes no trickle), or
  // after GATHER_MS with what there is.
  function gathered(peer) {
    if (peer.iceGatheringState === "complete") return Promise.resolve();
    return new Promise((ok) => {
      const done = () => {
        if (peer.iceGatheringState !== "complete") return;
        peer.removeEventListener("icegatheringstatechange", done);
        clearTimeout(timer);
        ok();
      };
      const timer = setTimeout(() => {
        peer.removeEventListener("icegatheringstatechange", done);
        ok();
      }, GATHER_MS);
      peer.addEventListener("icegatheringstatechange", done);
    });
  }

  async function openCall(ticket) {
    const peer = new RTCPeerConnection();
    pc = peer;
    for (const track of mic.getAudioTracks()) peer.addTrack(track, mic);
    peer.ontrack = (e) => {
      const audio = $("remote");
      audio.srcObject = e.streams[0] || new MediaStream([e.track]);
      audio.play().catch((err) => showError("audio_blocked", "the browser would not play the reply: " + err.message));
    };
    peer.onconnectionstatechange = () => {
      if (peer !== pc) return;
      if (peer.connectionState === "failed") {
        showError("call_failed", "the WebRTC connection failed (no ICE route to the server: see README, WebRTC networking)");
        hangUp("failed", "failed");
      } else if (peer.connectionState === "closed") {
        hangUp(state.phase === "open" ? "closed" : "failed", "call ended");
      }
    };
    const channel = peer.createDataChannel("oai-events");
    dc = channel;
    channel.onopen = () => {
      if (channel !== dc) return;
      setPhase("open", "connected (WebRTC)");
      send(sessionUpdate());
      sending = true;
      startCamera();
    };
    channel.binaryType = "arraybuffer";
    channel.onmessage = (m) => {
      // The server may send an event as a binary message: it is the same UTF-8 JSON.
      const data = typeof m.data === "string" ? m.data : new TextDecoder().decode(m.data);
      let ev;
      try { ev = JSON.parse(data); } catch (_) { return showError("bad_event", "the server sent a message that is not JSON"); }
      handle(ev);
    };
    channel.onclose = () => {
      if (channel !== dc) return;
      state.close = { code: 1000, reason: "data channel closed" };
      hangUp(state.phase === "open" ? "closed" : "failed", "call ended");
    };
    await peer.setLocalDescription(await peer.createOffer());
    await gathered(peer);
    if (peer !== pc) return; // hung up meanwhile
    const r = await fetch("/v1/realtime/calls", {
      method: "POST", cache: "no-store",
      headers: { Authorization: "Bearer " + ticket, "Content-Type": "application/sdp" },
      body: peer.localDescription.sdp,
    });
    const text = await r.text();
    if (r.status !== 201) {
      let body = {};
      try { body = JSON.parse(text); } catch (_) { /* not JSON */ }
      const err = body.error || {};
      throw pageError(err.code || body.name || "http_" + r.status, err.message || body.message || text || r.statusText);
    }
    if (peer !== pc) return;
    state.callId = (r.headers.get("Location") || "").split("/").pop() || null;
    await peer.setRemoteDescription({ type: "answer", sdp: text });
    statsTimer = setInterval(() => countInbound(peer), STATS_MS);
  }

  // countInbound reads the remote track's inbound-rtp figures: what of the reply arrived and was
  // decoded (totalAudioEnergy is above zero only for sound).
  async function countInbound(peer) {
    let report;
    try { report = await peer.getStats(); } catch (_) { return; }
    const at = performance.now();
    report.forEach((s) => {
      if (s.type !== "inbound-rtp" || s.kind !== "audio") return;
      const energy = s.totalAudioEnergy || 0;
      const bytes = s.bytesReceived || 0, packets = s.packetsReceived || 0;
      if (replyOnTrack && lastInbound && energy > lastInbound.energy) {
        replyRate = (energy - lastInbound.energy) / ((at - lastInbound.at) / 1000);
        if (packets > lastInbound.packets) replyBytes = (bytes - lastInbound.bytes) / (packets - lastInbound.packets);
      }
      lastInbound = { at, energy, bytes, packets };
      state.inbound = {
        bytes: s.bytesReceived || 0, packets: s.packetsReceived || 0,
        energy: s.totalAudioEnergy || 0, seconds: s.totalSamplesDuration || 0,
      };
      $("received").textContent = (s.packetsReceived || 0) + " packets";
    });
  }

  // watchCut measures a barge-in on the received track: from speech_started (at) to the first
  // moment the remote track's decoded sound (totalAudioEnergy, read every 20 ms) stays below 5%
  // of the reply's rate for QUIET_MS — what the listener hears stop, jitter buffer included.
  const CUT_POLL_MS = 20;
  const QUIET_MS = 300;
  //
  // It also measures the cut on the packets themselves, before any jitter buffer: from
  // speech_started to the first poll after which, for RTP_QUIET_MS, packets carry under 40% of the
  // reply's Opus bytes per packet (the server's silence tail) or none arrive. The poll's time is
  // the upper bound of when the last reply packet came.
  const RTP_QUIET_MS = 200;
  async function watchCut(peer, at) {
    const rate = replyRate;
    const perPacket = replyBytes;
    let prev = null;
    let quietFrom = 0;
    let rtpFrom = 0;
    let rtpDone = perPacket <= 0;
    let heardDone = false;
    while (peer === pc && performance.now() - at < 5000 && !(rtpDone && heardDone)) {
      let energy = null, bytes = 0, packets = 0;
      try {
        (await peer.getStats()).forEach((s) => {
          if (s.type === "inbound-rtp" && s.kind === "audio") {
            energy = s.totalAudioEnergy || 0;
            bytes = s.bytesReceived || 0;
            packets = s.packetsReceived || 0;
          }
        });
      } catch (_) { return; }
      const now = performance.now();
      if (energy !== null && prev && !rtpDone) {
        const n = packets - prev.packets;
        if (n === 0 || (bytes - prev.bytes) / n < 0.4 * perPacket) {
          if (!rtpFrom) rtpFrom = now;
          if (now - rtpFrom >= RTP_QUIET_MS) {
            state.rtpStopped.push(Math.round(rtpFrom - at));
            rtpDone = true;
          }
        } else {
          rtpFrom = 0;
        }
      }
      if (energy !== null && prev && !heardDone) {
        const r = (energy - prev.energy) / ((now - prev.at) / 1000);
        if (r < 0.05 * rate) {
          if (!quietFrom) quietFrom = prev.at;
          if (now - quietFrom >= QUIET_MS) {
            state.audioStopped.push(Math.round(quietFrom - at));
            heardDone = true;
          }
        } else {
          quietFrom = 0;
        }
      }
      if (energy !== null) prev = { at: now, energy, bytes, packets };
      await new Promise((ok) => setTimeout(ok, CUT_POLL_MS));
    }
  }

  function handle(ev) {
    state.events[ev.type] = (state.events[ev.type] || 0) + 1;
    const now = performance.now();
    switch (ev.type) {
      case "session.created":
      case "session.updated": {
        const s = ev.session || {};
        state.sessionId = s.id || state.sessionId;
        state.sessionType = s.type || state.sessionType;
        const a = s.audio || {};
        const td = (a.input && a.input.turn_detection) || s.turn_detection;
        const voice = (a.output && a.output.voice) || s.voice;
        $("session").textContent = [s.id, s.type, td ? td.type : "manual", s.type === "transcription" ? null : voice].filter(Boolean).join(" · ");
        break;
      }
      case "input_audio_buffer.speech_started":
        speechAt = now;
        if (replyOnTrack && replyRate > 0 && pc) watchCut(pc, now);
        state.speech.push({ item_id: ev.item_id, start_ms: ev.audio_start_ms, end_ms: null });
        if (player && player.playing()) bargeIn();
        line(ev.item_id, "user");
        break;
      case "input_audio_buffer.speech_stopped": {
        const sp = state.speech.find((x) => x.item_id === ev.item_id);
        if (sp) sp.end_ms = ev.audio_end_ms;
        turn = { stoppedAt: now, item_id: ev.item_id, seen: {} };
        break;
      }
      case "conversation.item.added":
      case "conversation.item.created": {
        const it = ev.item || {};
        if (it.type === "message" && (it.role === "user" || it.role === "assistant")) {
          const l = line(it.id, it.role);
          const text = (it.content || []).map((c) => c.text || c.transcript || "").join("");
          if (text) setText(l, text);
          else if (it.role === "user" && !$("transcribe").checked) l.text.textContent = "(audio)";
        }
        break;
      }
      case "conversation.item.input_audio_transcription.delta": {
        if (!$("transcribe").checked) break;
        const l = line(ev.item_id, "user");
        setText(l, l.value + (ev.delta || ""));
        break;
      }
      case "conversation.item.input_audio_transcription.completed":
        if (state.mode === "captions" || $("transcribe").checked) setText(line(ev.item_id, "user"), ev.transcript || "");
        if (state.mode === "captions") caption(ev);
        if (turn && ev.item_id === turn.item_id) figure("stopToTranscript", now - turn.stoppedAt);
        break;
      case "conversation.item.input_audio_transcription.failed":
        line(ev.item_id, "user").note.textContent = "(not transcribed)";
        showError((ev.error && ev.error.code) || "transcription_failed", (ev.error && ev.error.message) || "");
        break;
      case "response.output_item.added":
        if (ev.item && ev.item.type === "message") line(ev.item.id, "assistant");
        break;
      case "response.output_audio_transcript.delta":
      case "response.audio_transcript.delta":
      case "response.output_text.delta":
      case "response.text.delta": {
        const l = line(ev.item_id, "assistant");
        setText(l, l.value + (ev.delta || ""));
        if (turn) figure("stopToReplyText", now - turn.stoppedAt);
        break;
      }
      case "response.output_audio.delta":
      case "response.audio.delta": {
        const pcm = pcm16(ev.delta || "");
        state.receivedSamples += pcm.length;
        showCounts();
        const at = player ? player.push(ev.item_id, pcm) : -1;
        if (turn && at >= 0) {
          figure("stopToAudio", now - turn.stoppedAt);
          const lead = (at - ctx.currentTime + (ctx.outputLatency || 0)) * 1000;
          figure("stopToSound", now - turn.stoppedAt + Math.max(0, lead));
        }
        break;
      }
      case "output_audio_buffer.started": // WebRTC: the reply starts on the track
        replyOnTrack = true;
        if (turn) figure("stopToAudio", now - turn.stoppedAt);
        break;
      case "output_audio_buffer.stopped":
        replyOnTrack = false;
        break;
      case "output_audio_buffer.cleared": // WebRTC: a barge-in cut the reply on the server
        replyOnTrack = false;
        if (speechAt) state.bufferCleared.push(Math.round(now - speechAt));
        break;
      case "response.done": {
        const r = ev.response || {};
        if (r.status && r.status !== "completed") {
          for (const it of r.output || []) {
            const l = lines.get(it.id);
            if (l && !l.note.textContent) l.note.textContent = `(${r.status})`;
          }
        }
        if (r.status === "failed") {
          const e = (r.status_details && r.status_details.error) || {};
          showError(e.code || "response_failed", e.message || "the response failed");
        }
        break;
      }
      case "conversation.item.truncated": {
        const l = lines.get(ev.item_id);
        if (l) l.note.textContent = `(interrupted at ${(ev.audio_end_ms / 1000).toFixed(1)} s)`;
        break;
      }
      case "error": {
        const e = ev.error || {};
        showError(e.code || e.type || "error", e.message || "");
        break;
      }
      default:
        break;
    }
  }

  // caption notes a completed turn in captions mode with its times on the session's audio clock
  // (speech_started's audio_start_ms to speech_stopped's audio_end_ms; a manual commit has none).
  function caption(ev) {
    const sp = state.speech.find((x) => x.item_id === ev.item_id) || {};
    const c = { item_id: ev.item_id, start_ms: sp.start_ms ?? null, end_ms: sp.end_ms ?? null, text: ev.transcript || "" };
    state.captions.push(c);
    if (c.start_ms !== null && c.end_ms !== null) {
      line(ev.item_id, "user").note.textContent = `[${(c.start_ms / 1000).toFixed(2)}–${(c.end_ms / 1000).toFixed(2)} s]`;
    }
  }

  // bargeIn stops playback when the speaker talks over the reply and tells the server how much of
  // it was heard (as realtime-api-beta does); the server has already cancelled a reply in progress.
  function bargeIn() {
    const { item, played } = player.stop();
    if (!item) return;
    const ms = Math.floor((played / RATE) * 1000);
    send({ type: "conversation.item.truncate", item_id: item, content_index: 0, audio_end_ms: ms });
    state.truncations.push({ item_id: item, audio_end_ms: ms });
  }

  async function connect(e) {
    e.preventDefault();
    const credential = $("credential").value.trim();
    if (!credential) return;
    setPhase("ticket", "getting a ticket");
    try {
      // The AudioContext is made inside the click, so the browser lets it play.
      ctx = new AudioContext({ latencyHint: "interactive" });
      player = new Player(ctx);
      await startMicrophone();
      const ticket = credential.startsWith("ek_") ? credential : await ticketFor(credential);
      if (state.phase !== "ticket") return; // hung up meanwhile
      setPhase("connecting", "connecting");
      state.transport = $("transport").value;
      state.mode = $("mode").value;
      if (state.transport === "webrtc") {
        if (typeof RTCPeerConnection !== "function") throw pageError("webrtc_unavailable", "this browser has no WebRTC: choose WebSocket");
        await openCall(ticket);
      } else {
        openSocket(ticket);
      }
    } catch (err) {
      showError(err.code || err.name || "error", err.message);
      hangUp("failed", "failed");
    }
  }

  function hangUp(phase, text) {
    sending = false;
    stopCamera();
    clearInterval(statsTimer);
    statsTimer = 0;
    if (dc || pc) {
      // Closing the peer connection ends the call on the server.
      const channel = dc;
      const peer = pc;
      dc = pc = null;
      if (channel) channel.close();
      if (peer) peer.close();
      $("remote").srcObject = null;
    }
    if (ws) {
      const sock = ws;
      ws = null;
      if (sock.readyState === WebSocket.OPEN || sock.readyState === WebSocket.CONNECTING) sock.close(1000, "hang up");
    }
    if (capture) capture.port.onmessage = null;
    if (mic) mic.getTracks().forEach((t) => t.stop());
    if (ctx) ctx.close();
    capture = mic = ctx = player = null;
    turn = null;
    speechAt = 0;
    $("level").value = 0;
    setPhase(phase || "idle", text || "not connected");
  }

  // ---- the camera (voiced's extension: input_video_buffer.append) ----

  // A still frame a second while the toggle is on and the conversation open: a JPEG of at most
  // 640 px wide, well under the server's frame bound, at half its default rate.
  async function startCamera() {
    if (camera || !$("camera").checked || state.mode === "captions") return;
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      showError("camera_unavailable", "this browser gives no camera here: open the page over https or on localhost");
      return;
    }
    const cam = { stream: null, video: document.createElement("video"), canvas: document.createElement("canvas"), timer: 0 };
    camera = cam;
    try {
      cam.stream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
    } catch (err) {
      camera = null;
      showError("camera_unavailable", err.message);
      return;
    }
    if (camera !== cam) return stopTracks(cam); // turned off meanwhile
    cam.video.muted = true;
    cam.video.srcObject = cam.stream;
    await cam.video.play().catch(() => {});
    cam.timer = setInterval(() => {
      const w = cam.video.videoWidth, h = cam.video.videoHeight;
      if (!w || !h || !sending) return;
      const scale = Math.min(1, 640 / w);
      cam.canvas.width = Math.round(w * scale);
      cam.canvas.height = Math.round(h * scale);
      cam.canvas.getContext("2d").drawImage(cam.video, 0, 0, cam.canvas.width, cam.canvas.height);
      send({ type: "input_video_buffer.append", image: cam.canvas.toDataURL("image/jpeg", 0.7) });
      state.sentFrames++;
    }, 1000);
  }

  function stopTracks(cam) {
    if (cam.stream) cam.stream.getTracks().forEach((t) => t.stop());
  }

  function stopCamera() {
    if (!camera) return;
    clearInterval(camera.timer);
    stopTracks(camera);
    camera = null;
  }

  $("camera").addEventListener("change", () => ($("camera").checked && sending ? startCamera() : stopCamera()));

  $("connect-form").addEventListener("submit", connect);
  $("hangup").addEventListener("click", () => hangUp("idle", "not connected"));
})();
