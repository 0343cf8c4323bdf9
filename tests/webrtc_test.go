package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/rtc"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// rtcClient is a WebRTC client as a browser SDK is: a microphone track, the oai-events data
// channel, and the reply's track decoded as it arrives.
type rtcClient struct {
	pc     *webrtc.PeerConnection
	mic    *webrtc.TrackLocalStaticSample
	dc     *webrtc.DataChannel
	dcOpen chan struct{}
	events chan map[string]any
	wg     sync.WaitGroup

	mu       sync.Mutex
	received int       // reply samples (48 kHz) decoded from the track
	packets  int       // RTP packets received on it
	lastAt   time.Time // when the last one arrived
	pcm      []int16   // every reply sample decoded from the track, in order (48 kHz)
	rx       []rxPacket
}

// rxPacket is one RTP packet received on the reply's track.
type rxPacket struct {
	at      time.Time
	seq     uint16
	rtpTime uint32
	rms     float64 // of its decoded 20 ms, full scale 1
}

func newRTCClient(t testing.TB) *rtcClient { return newRTCClientWith(t, nil) }

// newRTCClientWith is newRTCClient with its SettingEngine adjusted by tune (nil: as it is).
func newRTCClientWith(t testing.TB, tune func(*webrtc.SettingEngine)) *rtcClient {
	t.Helper()
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		t.Fatal(err)
	}
	se := webrtc.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	if tune != nil {
		tune(&se)
	}
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	c := &rtcClient{pc: pc, dcOpen: make(chan struct{}), events: make(chan map[string]any, 1024)}
	c.mic, _ = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic", "client")
	if _, err := pc.AddTrack(c.mic); err != nil {
		t.Fatal(err)
	}
	if c.dc, err = pc.CreateDataChannel("oai-events", nil); err != nil {
		t.Fatal(err)
	}
	c.dc.OnOpen(func() { close(c.dcOpen) })
	c.dc.OnMessage(func(msg webrtc.DataChannelMessage) {
		var ev map[string]any
		if json.Unmarshal(msg.Data, &ev) == nil {
			ev["_arrived"] = time.Now() // when it came off the channel, for timing against the track
			select {
			case c.events <- ev:
			default:
			}
		}
	})
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			dec, err := opus.NewDecoder()
			if err != nil {
				return
			}
			defer dec.Close()
			for {
				p, _, err := tr.ReadRTP()
				if err != nil {
					return
				}
				at := time.Now()
				if pcm, err := dec.Decode(p.Payload); err == nil {
					c.mu.Lock()
					c.received += len(pcm)
					c.packets++
					c.lastAt = at
					c.pcm = append(c.pcm, pcm...)
					c.rx = append(c.rx, rxPacket{at: at, seq: p.SequenceNumber, rtpTime: p.Timestamp, rms: rms16(pcm)})
					c.mu.Unlock()
				}
			}
		}()
	})
	t.Cleanup(func() { pc.Close(); c.wg.Wait() })
	return c
}

// rms16 is the root mean square of pcm, full scale 1.
func rms16(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, v := range pcm {
		f := float64(v) / 32768
		sum += f * f
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// replyPCM is the reply audio decoded from the track so far (48 kHz), a copy.
func (c *rtcClient) replyPCM() []int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int16(nil), c.pcm...)
}

// call posts the offer to POST /v1/realtime/calls with the credential, as the Agents SDK does,
// and applies the answer; it returns the call's Location.
func (c *rtcClient) call(t testing.TB, s *server, credential string) string {
	t.Helper()
	return c.callWith(t, s, credential, nil)
}

// callWith is call, the client applying mangle(answer) (nil: the answer as it is).
func (c *rtcClient) callWith(t testing.TB, s *server, credential string, mangle func(string) string) string {
	t.Helper()
	offer, err := c.pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(c.pc)
	if err := c.pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	req, _ := http.NewRequest("POST", s.Base+"/v1/realtime/calls", strings.NewReader(c.pc.LocalDescription().SDP))
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Content-Type") != "application/sdp" {
		t.Fatalf("POST /v1/realtime/calls: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	answer := string(body)
	if mangle != nil {
		answer = mangle(answer)
	}
	if err := c.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.dcOpen:
	case <-time.After(15 * time.Second):
		t.Fatal("the oai-events data channel did not open")
	}
	return resp.Header.Get("Location")
}

// speak sends 24 kHz speech on the microphone track as paced 20 ms Opus packets.
func (c *rtcClient) speak(t testing.TB, pcm24k []int16) {
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Error(err)
		return
	}
	defer enc.Close()
	pcm := audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(pcm24k), 24000, 48000))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; (i+1)*opus.FrameSamples <= len(pcm); i++ {
		<-tick.C
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Error(err)
			return
		}
		if c.mic.WriteSample(media.Sample{Data: p, Duration: 20 * time.Millisecond}) != nil {
			return
		}
	}
}

// until reads events until one of type typ, failing on timeout; it returns all read.
func (c *rtcClient) until(t *testing.T, typ string, d time.Duration) []map[string]any {
	t.Helper()
	var got []map[string]any
	deadline := time.After(d)
	for {
		select {
		case ev := <-c.events:
			got = append(got, ev)
			if ev["type"] == typ {
				return got
			}
		case <-deadline:
			var types []string
			for _, e := range got {
				types = append(types, e["type"].(string))
			}
			t.Fatalf("no %s within %v; got %v", typ, d, types)
		}
	}
}

// rtcTranscript is the reply's transcript among events from the data channel: its
// response.output_audio_transcript.done, else its deltas joined.
func rtcTranscript(evs []map[string]any) string {
	var deltas strings.Builder
	for _, e := range evs {
		switch e["type"] {
		case "response.output_audio_transcript.done":
			s, _ := e["transcript"].(string)
			return s
		case "response.output_audio_transcript.delta":
			s, _ := e["delta"].(string)
			deltas.WriteString(s)
		}
	}
	return deltas.String()
}

// TestWebRTCSpokenTurn: a WebRTC client (pion, as a browser SDK) with a GA ephemeral key from
// /v1/realtime/client_secrets posts its offer to POST /v1/realtime/calls, gets session.created on
// oai-events, speaks real speech on its microphone track, and hears the reply on the server's
// track: the turn's events arrive on the data channel, no audio travels in events, playback is
// announced (output_audio_buffer.started/.stopped), the call counts against the conversation cap,
// and hanging up releases it.
func TestWebRTCSpokenTurn(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	s := startRealtime(t, serverOpts{Args: []string{"--max-conversations", "1"}})
	question := espeakSpeech(t, "What is the weather like today?")
	c := newRTCClient(t)
	location := c.call(t, s, s.mintGA(t, s.jwt("rtc-user", "acme")))
	if !strings.HasPrefix(location, "/v1/realtime/calls/") {
		t.Fatalf("Location %q", location)
	}
	c.until(t, "session.created", 10*time.Second)

	// The call holds the one conversation slot: another call is refused at capacity meanwhile.
	if st, body := s.do("GET", "/v1/voice/health", "", nil); st != 200 || !strings.Contains(string(body), `"busy":1`) {
		t.Errorf("voice health during the call: %d %s, want busy 1", st, body)
	}
	{
		other := newRTCClient(t)
		offer, _ := other.pc.CreateOffer(nil)
		req, _ := http.NewRequest("POST", s.Base+"/v1/realtime/calls", strings.NewReader(offer.SDP))
		req.Header.Set("Authorization", "Bearer "+s.mintGA(t, s.jwt("rtc-user-2", "other")))
		req.Header.Set("Content-Type", "application/sdp")
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Name string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 429 || e.Name != "too_many_conversations" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a second call at capacity: %d %q, want 429 too_many_conversations with Retry-After", resp.StatusCode, e.Name)
		}
	}

	go c.speak(t, append(append(silence24k(0.5), question...), silence24k(2)...))
	evs := c.until(t, "response.done", 30*time.Second)
	var types []string
	for _, e := range evs {
		types = append(types, e["type"].(string))
	}
	all := strings.Join(types, " ")
	for _, want := range []string{"input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
		"input_audio_buffer.committed", "response.created", "response.output_audio_transcript.delta", "response.done"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s on the data channel: %s", want, all)
		}
	}
	if strings.Contains(all, "response.output_audio.delta") {
		t.Errorf("audio deltas travelled in events over WebRTC: %s", all)
	}
	if !strings.Contains(all, "output_audio_buffer.started") {
		evs = append(evs, c.until(t, "output_audio_buffer.started", 10*time.Second)...)
	}
	c.until(t, "output_audio_buffer.stopped", 30*time.Second)
	reply := c.replyPCM()
	if len(reply) < 48000/2 {
		t.Errorf("the reply's track carried %d samples (48 kHz); want the spoken reply", len(reply))
	}
	// The reply's audio, as decoded from the track, carries the reply: resampled to 16 kHz, its
	// first sentence reads back through the fixture codec as that sentence's phonemes.
	transcript := rtcTranscript(evs)
	sentences := kokoro.SplitSentences(transcript)
	if len(sentences) == 0 {
		t.Fatalf("reply transcript %q has no sentence", transcript)
	}
	if err := checkReplyPCM16(t, s, sentences[0], audio.Resample(audio.Int16ToFloat32(reply), opus.SampleRate, 16000)); err != nil {
		t.Errorf("the reply over Opus: %v", err)
	} else {
		t.Logf("the reply's first sentence %q read back from %d samples of the track", sentences[0], len(reply))
	}

	// A text turn on the data channel: the echo mind says the round-trip sentence back (about 3 s
	// of codec tones in one synthesis call), a stronger read-back through Opus than "You said: ;".
	mark := len(c.replyPCM())
	c.dc.SendText(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + roundTripSentence + `"}]}}`)
	c.dc.SendText(`{"type":"response.create"}`)
	evs = c.until(t, "response.done", 30*time.Second)
	c.until(t, "output_audio_buffer.stopped", 30*time.Second)
	transcript = rtcTranscript(evs)
	if sentences = kokoro.SplitSentences(transcript); len(sentences) == 0 || !strings.Contains(sentences[0], roundTripSentence[:20]) {
		t.Fatalf("text turn: reply transcript %q, want the echo of %q", transcript, roundTripSentence)
	}
	reply = c.replyPCM()[mark:]
	if err := checkReplyPCM16(t, s, sentences[0], audio.Resample(audio.Int16ToFloat32(reply), opus.SampleRate, 16000)); err != nil {
		t.Errorf("the text turn's reply over Opus: %v", err)
	} else {
		t.Logf("the text turn's reply %q read back from %d samples of the track", sentences[0], len(reply))
	}

	// An append over WebRTC is refused by name (audio travels on the track).
	c.dc.SendText(`{"type":"input_audio_buffer.append","audio":"AAAA"}`)
	e := c.until(t, "error", 10*time.Second)
	if code := e[len(e)-1]["error"].(map[string]any)["code"]; code != "input_audio_on_track" {
		t.Errorf("append over WebRTC: error code %v, want input_audio_on_track", code)
	}

	// A sideband socket (server credential) on the call: it sees the call's events, and its
	// response.create is answered on the call (events on the data channel, audio on the track).
	callID := strings.TrimPrefix(location, "/v1/realtime/calls/")
	if _, resp, err := websocket.Dial(ctxT(t, 10*time.Second), s.WSBase+"/v1/realtime?call_id="+callID, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("sideband without the service token: %v, want 401", err)
	}
	if _, resp, err := websocket.Dial(ctxT(t, 10*time.Second), s.WSBase+"/v1/realtime?call_id=rtc_nope", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + s.Token}}}); err == nil || resp == nil || resp.StatusCode != 404 {
		t.Errorf("sideband on an unknown call: %v, want 404", err)
	}
	side, _, err := websocket.Dial(ctxT(t, 10*time.Second), s.WSBase+"/v1/realtime?call_id="+callID, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + s.Token}}})
	if err != nil {
		t.Fatalf("sideband: %v", err)
	}
	c.mu.Lock()
	before := c.received
	c.mu.Unlock()
	if err := side.Write(ctxT(t, 5*time.Second), websocket.MessageText, []byte(`{"type":"response.create","response":{"instructions":"Say hello."}}`)); err != nil {
		t.Fatal(err)
	}
	sideSaw := map[string]bool{}
	for !sideSaw["response.done"] {
		_, data, err := side.Read(ctxT(t, 20*time.Second))
		if err != nil {
			t.Fatalf("sideband read: %v (saw %v)", err, sideSaw)
		}
		var ev struct{ Type string }
		json.Unmarshal(data, &ev)
		sideSaw[ev.Type] = true
	}
	c.until(t, "response.done", 10*time.Second)
	c.until(t, "output_audio_buffer.stopped", 30*time.Second)
	c.mu.Lock()
	after := c.received
	c.mu.Unlock()
	if !sideSaw["response.created"] || after <= before {
		t.Errorf("the sideband's response: sideband saw %v; the call's track carried %d more samples", sideSaw, after-before)
	}
	side.Close(websocket.StatusNormalClosure, "")

	// Hang up with the service token; the slot is released.
	if st, body := s.do("DELETE", location, "", nil); st != 200 {
		t.Fatalf("DELETE %s: %d %s", location, st, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := s.do("GET", "/v1/voice/health", "", nil)
		if strings.Contains(string(body), `"busy":0`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call's slot was not released after hang-up: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, spoken := s.usageWhen(t, "rtc-user", func(_, spoken float64) bool { return spoken > 0 })
	if spoken <= 0 {
		t.Errorf("the call's reply was not metered")
	}
	s.stop()
}

// TestWebRTCRefusals: the call's offer is refused as the WebSocket handshake is, by name, and a
// malformed body never spends the ticket.
func TestWebRTCRefusals(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	s := startRealtime(t, serverOpts{Args: []string{"--allow-origin", "https://app.example.com"}})
	post := func(credential, contentType, body, origin string) (int, string) {
		req, _ := http.NewRequest("POST", s.Base+"/v1/realtime/calls", strings.NewReader(body))
		if credential != "" {
			req.Header.Set("Authorization", "Bearer "+credential)
		}
		req.Header.Set("Content-Type", contentType)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct{ Name string }
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Name
	}
	c := newRTCClient(t)
	offer, _ := c.pc.CreateOffer(nil)
	ticket := s.mintGA(t, s.jwt("rtc-refused", "acme"))
	// A session part the conversation cannot start with (a voice that is not a string): refused
	// before the answer, and the ticket kept (it was answered 201, then the call died with the
	// ticket spent).
	var mp strings.Builder
	mw := multipart.NewWriter(&mp)
	mw.WriteField("sdp", offer.SDP)
	mw.WriteField("session", `{"type":"realtime","audio":{"output":{"voice":7}}}`)
	mw.Close()
	for name, tc := range map[string]struct {
		credential, contentType, body, origin string
		status                                int
		want                                  string
	}{
		"no credential":      {"", "application/sdp", offer.SDP, "", 401, "missing_credential"},
		"unknown ticket":     {"ek_" + strings.Repeat("0", 43), "application/sdp", offer.SDP, "", 401, "ticket_invalid"},
		"bad JWT":            {"not.a.jwt", "application/sdp", offer.SDP, "", 401, "invalid_token"},
		"origin not allowed": {ticket, "application/sdp", offer.SDP, "https://evil.example", 403, "origin_not_allowed"},
		"not SDP":            {ticket, "text/plain", "hello", "", 400, "invalid_offer"},
		"SDP without audio":  {ticket, "application/sdp", "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n", "", 400, "invalid_offer"},
		// The repro: 12,000 candidates got a 500 and an ERROR log (and 2,000 had the
		// server send ~15,000 STUN packets to the addresses they named).
		"12,000 candidates": {ticket, "application/sdp", withHostCandidates(offer.SDP, 12000), "", 400, "invalid_offer"},
		"invalid session":   {ticket, mw.FormDataContentType(), mp.String(), "", 400, "invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			if st, got := post(tc.credential, tc.contentType, tc.body, tc.origin); st != tc.status || got != tc.want {
				t.Errorf("%d %q, want %d %q", st, got, tc.status, tc.want)
			}
		})
	}
	if s.logs.has(`"level":"ERROR"`) {
		t.Errorf("a refused offer was logged at ERROR:\n%s", s.logs)
	}
	// Nothing mounted: the call is refused like the socket.
	bare := startRealtime(t, serverOpts{NoMount: true})
	{
		req, _ := http.NewRequest("POST", bare.Base+"/v1/realtime/calls", strings.NewReader(offer.SDP))
		req.Header.Set("Authorization", "Bearer "+bare.jwt("rtc-bare", "acme"))
		req.Header.Set("Content-Type", "application/sdp")
		resp, err := bare.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Name string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 503 || e.Name != "speech_assets_not_mounted" {
			t.Errorf("a call with nothing mounted: %d %q, want 503 speech_assets_not_mounted", resp.StatusCode, e.Name)
		}
	}
	bare.stop()

	// The refusals above (origin, body, session) did not spend the ticket: it still opens a call.
	c2 := newRTCClient(t)
	loc := c2.call(t, s, ticket)
	c2.until(t, "session.created", 10*time.Second)
	s.do("DELETE", loc, "", nil)

	// CORS: a preflight from an allowed page passes and exposes Location; another page's is refused.
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", s.Base+"/v1/realtime/calls", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-openai-agents-sdk")
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := preflight("https://app.example.com"); r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "x-openai-agents-sdk") {
		t.Errorf("preflight from an allowed page: %d %v", r.StatusCode, r.Header)
	}
	if r := preflight("https://evil.example"); r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another page: %d %v", r.StatusCode, r.Header)
	}
	s.stop()
}

// energetic is the RMS (full scale 1) above which a received 20 ms packet carries reply audio: the
// fixture Kokoro's tones are about 0.25 each, Opus's decoded silence is near 0.
const energetic = 0.01

// TestWebRTCBargeIn: speech on the microphone track while a long reply plays on the server's track
// stops the reply's audio, measured on the track as received: at most 5 energetic 20 ms packets
// (100 ms, the bound) arrive after input_audio_buffer.speech_started does. The server says
// output_audio_buffer.cleared and truncates the assistant item to what went out on the track
// (conversation.item.truncated), which is the reply audio the client received, packet for packet.
func TestWebRTCBargeIn(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	s := startRealtime(t, serverOpts{})
	question := espeakSpeech(t, "What is the weather like today?")
	c := newRTCClient(t)
	c.call(t, s, s.mintGA(t, s.jwt("rtc-barge", "acme")))
	c.until(t, "session.created", 10*time.Second)

	// A long reply (the echo mind repeats it): 40 sentences, minutes of audio.
	var long strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&long, "This is sentence number %d of a very long answer that keeps on going. ", i)
	}
	item, _ := json.Marshal(map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": long.String()}}}})
	c.dc.SendText(string(item))
	c.dc.SendText(`{"type":"response.create"}`)
	evs := c.until(t, "output_audio_buffer.started", 30*time.Second)
	var itemID string
	for _, e := range evs {
		if e["type"] == "response.output_item.added" {
			itemID, _ = e["item"].(map[string]any)["id"].(string)
		}
	}

	// The user speaks over it (half a second of the reply plays first: the clip's lead-in).
	spoke := make(chan struct{})
	go func() {
		defer close(spoke)
		c.speak(t, append(append(silence24k(0.5), question...), silence24k(1.5)...))
	}()
	defer func() { <-spoke }()
	evs = c.until(t, "input_audio_buffer.speech_started", 30*time.Second)
	started := evs[len(evs)-1]["_arrived"].(time.Time)
	evs = c.until(t, "input_audio_buffer.speech_stopped", 30*time.Second)
	stopped := evs[len(evs)-1]["_arrived"].(time.Time)
	saw := map[string]map[string]any{}
	for _, e := range evs {
		saw[e["type"].(string)] = e
	}
	if saw["output_audio_buffer.cleared"] == nil {
		t.Errorf("no output_audio_buffer.cleared between speech_started and speech_stopped: %v", typesOfMaps(evs))
	}
	if d := saw["response.done"]; d == nil {
		t.Errorf("the reply was not cancelled: %v", typesOfMaps(evs))
	} else if r := d["response"].(map[string]any); r["status"] != "cancelled" {
		t.Errorf("the interrupted reply's response.done: status %v", r["status"])
	}

	// On the track, everything received before speech_stopped (the next reply starts after it) is
	// the cut reply followed by its silence tail: rtc.CutTailPackets packets of encoded silence on
	// the same RTP timeline (the tail is over 200 ms after the cut, long before speech_stopped).
	// The reply's packets carrying energy after speech_started arrived are the overrun.
	c.mu.Lock()
	rx := append([]rxPacket(nil), c.rx...)
	c.mu.Unlock()
	received := 0
	for received < len(rx) && rx[received].at.Before(stopped) {
		received++
	}
	reply := received - rtc.CutTailPackets
	if reply <= 0 {
		t.Fatalf("%d packets before speech_stopped: not even the silence tail (%d)", received, rtc.CutTailPackets)
	}
	for i := 1; i < received; i++ {
		if d := rx[i].rtpTime - rx[i-1].rtpTime; d != opus.FrameSamples {
			t.Fatalf("packet %d of %d: RTP timestamp +%d, want +%d (one timeline through the tail)", i, received, d, opus.FrameSamples)
		}
	}
	// The tail's first packet still carries the encoder's lookahead of the cut reply (6.5 ms,
	// counted as played); the rest decode to silence.
	for i, p := range rx[reply+1 : received] {
		if p.rms >= energetic {
			t.Errorf("silence tail packet %d of %d has RMS %.4f, want < %v", i+1, rtc.CutTailPackets, p.rms, energetic)
		}
	}
	var before, after int
	var last, lastBefore time.Time
	for _, p := range rx[:reply+1] {
		if p.rms < energetic {
			continue
		}
		if p.at.After(started) {
			after++
			last = p.at
		} else {
			before++
			lastBefore = p.at
		}
	}
	overrun := time.Duration(0)
	if after > 0 {
		overrun = last.Sub(started)
	}
	t.Logf("barge-in: %d energetic packets before speech_started arrived (the last %v before it), %d after it (the last %v after it); %d packets of the reply in all",
		before, started.Sub(lastBefore), after, overrun, reply)
	if before < 10 {
		t.Fatalf("the reply was not playing when the user spoke: %d energetic packets before speech_started", before)
	}
	if after > 5 {
		t.Errorf("reply audio ran on after speech_started: %d energetic 20 ms packets (%v), want at most 5 (100 ms)", after, overrun)
	}

	// The item is truncated to what went out on the track: each reply packet carried 20 ms of it.
	tr := saw["conversation.item.truncated"]
	if tr == nil {
		t.Fatalf("no conversation.item.truncated between speech_started and speech_stopped: %v", typesOfMaps(evs))
	}
	endMs, _ := tr["audio_end_ms"].(float64)
	if tr["item_id"] != itemID || tr["content_index"] != float64(0) || int(endMs) != 20*reply {
		t.Errorf("conversation.item.truncated %v; want item %s content 0 audio_end_ms %d (%d packets received)", tr, itemID, 20*reply, reply)
	}
	c.until(t, "response.done", 30*time.Second) // the user's turn is answered
	s.stop()
}

// withHostCandidates adds n host candidates (127.0.0.1, distinct ports) to the offer's first m-line.
func withHostCandidates(offer string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a=candidate:%d 1 udp %d 127.0.0.1 %d typ host\r\n", 1000+i, 2113937151-i, 20000+i%40000)
	}
	at := strings.Index(offer, "\r\nm=")
	if next := strings.Index(offer[at+2:], "\r\nm="); next >= 0 {
		at += 2 + next // the end of the first m-line's section
	} else {
		at = len(offer) - 2
	}
	return offer[:at+2] + b.String() + offer[at+2:]
}

func typesOfMaps(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["type"].(string))
	}
	return out
}

// refusalOf decodes a refusal's status and name.
func refusalOf(resp *http.Response) (int, string) {
	if resp == nil {
		return 0, ""
	}
	var e struct{ Name string }
	if resp.Body != nil {
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
	}
	return resp.StatusCode, e.Name
}

// postCall posts an offer to POST /v1/realtime/calls with credential and returns the refusal (or
// the 201 with no name).
func (s *server) postCall(t *testing.T, credential, offer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.Base+"/v1/realtime/calls", strings.NewReader(offer))
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return refusalOf(resp)
}

// dialRefusal opens the GA WebSocket handshake with credential and returns its refusal.
func (s *server) dialRefusal(t *testing.T, credential string) (int, string) {
	t.Helper()
	conn, resp, err := websocket.Dial(ctxT(t, 10*time.Second), s.WSBase+"/v1/realtime?model=m", &websocket.DialOptions{
		HTTPClient: s.Client, HTTPHeader: http.Header{"Authorization": {"Bearer " + credential}}})
	if err == nil {
		conn.CloseNow()
		t.Fatalf("the WebSocket handshake was admitted; want it refused")
	}
	return refusalOf(resp)
}

// TestWebRTCRefusalsLikeSocket: the refusals that need state (the tenant's cap held, the
// principal's quota spent) answer a call's offer with the WebSocket handshake's status and name.
func TestWebRTCRefusalsLikeSocket(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	needFlag(t, "quota-seconds-per-day")
	s := startRealtime(t, serverOpts{Args: []string{"--max-per-tenant", "1", "--quota-seconds-per-day", "1"}})
	offerer := newRTCClient(t)
	offer, _ := offerer.pc.CreateOffer(nil)

	t.Run("tenant cap", func(t *testing.T) {
		held := newRTCClient(t)
		loc := held.call(t, s, s.jwt("tenant-a", "capped-org"))
		held.until(t, "session.created", 10*time.Second)
		wsStatus, wsName := s.dialRefusal(t, s.jwt("tenant-b", "capped-org"))
		st, name := s.postCall(t, s.jwt("tenant-c", "capped-org"), offer.SDP)
		if wsStatus != 429 || wsName != "too_many_conversations_for_tenant" || st != wsStatus || name != wsName {
			t.Errorf("at the tenant's cap: call %d %q, socket %d %q; want both 429 too_many_conversations_for_tenant", st, name, wsStatus, wsName)
		}
		if st, body := s.do("DELETE", loc, "", nil); st != 200 {
			t.Fatalf("DELETE %s: %d %s", loc, st, body)
		}
	})

	t.Run("quota", func(t *testing.T) {
		// A call whose reply outlasts the principal's 1 s a day spends it.
		spender := newRTCClient(t)
		loc := spender.call(t, s, s.jwt("quota-user", "quota-org"))
		spender.until(t, "session.created", 10*time.Second)
		spender.dc.SendText(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + roundTripSentence + `"}]}}`)
		spender.dc.SendText(`{"type":"response.create"}`)
		if _, spoken := s.usageWhen(t, "quota-user", func(_, spoken float64) bool { return spoken >= 1 }); spoken < 1 {
			t.Fatalf("the call spoke %.2f s; want the 1 s quota spent", spoken)
		}
		s.do("DELETE", loc, "", nil)
		wsStatus, wsName := s.dialRefusal(t, s.jwt("quota-user", "quota-org"))
		st, name := s.postCall(t, s.jwt("quota-user", "quota-org"), offer.SDP)
		if wsStatus != 429 || wsName != "quota_exceeded" || st != wsStatus || name != wsName {
			t.Errorf("over quota: call %d %q, socket %d %q; want both 429 quota_exceeded", st, name, wsStatus, wsName)
		}
	})
	s.stop()
}

// TestCallAnyNode: two nodes on one private Redis (--cluster-store). A call answered on A is named
// for A (rtc_<node>.<hex>); on B its sideband socket attaches to it (the WebSocket upgrade is
// forwarded to A: the sideband sees the call's events and its response.create is spoken on the
// call's track) and DELETE ends it on A. A call whose node is gone, or an id naming no live node,
// is 404 call_not_found on B.
func TestCallAnyNode(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	needFlag(t, "cluster-store")
	rd := startPrivateRedis(t)
	shared := serverOpts{Token: "e2e-cluster-" + randHex(8), Args: []string{"--cluster-store", rd.url()}}
	a := startRealtime(t, shared)
	b := startRealtime(t, shared)
	notFound := func(st int, body []byte) bool {
		var e struct{ Name string }
		json.Unmarshal(body, &e)
		return st == http.StatusNotFound && e.Name == "call_not_found"
	}

	c := newRTCClient(t)
	loc := c.call(t, a, a.jwt("rtc-any-node", "acme"))
	c.until(t, "session.created", 10*time.Second)
	id := strings.TrimPrefix(loc, "/v1/realtime/calls/")
	if !regexp.MustCompile(`^rtc_[a-z0-9-]{1,40}\.[0-9a-f]{24}$`).MatchString(id) {
		t.Fatalf("call id %q, want rtc_<node>.<hex>", id)
	}

	// The sideband on B: the service token is checked on B, the socket is A's.
	if _, resp, err := websocket.Dial(ctxT(t, 10*time.Second), b.WSBase+"/v1/realtime?call_id="+id, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("sideband on B without the service token: %v, want 401", err)
	}
	side, _, err := websocket.Dial(ctxT(t, 10*time.Second), b.WSBase+"/v1/realtime?call_id="+id, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + b.Token}}})
	if err != nil {
		t.Fatalf("sideband on B for A's call: %v\nA: %s\nB: %s", err, a.logs, b.logs)
	}
	before := len(c.replyPCM())
	if err := side.Write(ctxT(t, 5*time.Second), websocket.MessageText, []byte(`{"type":"response.create","response":{"instructions":"Say hello."}}`)); err != nil {
		t.Fatal(err)
	}
	sideSaw := map[string]bool{}
	for !sideSaw["response.done"] {
		_, data, err := side.Read(ctxT(t, 20*time.Second))
		if err != nil {
			t.Fatalf("sideband read through B: %v (saw %v)", err, sideSaw)
		}
		var ev struct{ Type string }
		json.Unmarshal(data, &ev)
		sideSaw[ev.Type] = true
	}
	c.until(t, "response.done", 10*time.Second)
	c.until(t, "output_audio_buffer.stopped", 30*time.Second)
	if after := len(c.replyPCM()); !sideSaw["response.created"] || after <= before {
		t.Errorf("the sideband's response through B: it saw %v; the call's track carried %d more samples", sideSaw, after-before)
	}
	side.Close(websocket.StatusNormalClosure, "")

	// Hung up on B, the call ends on A.
	if st, body := b.do("DELETE", loc, "", nil); st != 200 {
		t.Fatalf("DELETE %s on B: %d %s", loc, st, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := a.do("GET", "/v1/voice/health", "", nil)
		if strings.Contains(string(body), `"busy":0`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's call was not released after the hang-up on B: %s", body)
		}
		time.Sleep(50 * time.Millisecond) // polling A's health, not synchronising
	}
	if st, body := b.do("POST", loc+"/hangup", "", nil); !notFound(st, body) {
		t.Errorf("hang-up on B of A's ended call: %d %s, want 404 call_not_found", st, body)
	}
	if st, body := b.do("DELETE", "/v1/realtime/calls/rtc_nosuchnode.00", "", nil); !notFound(st, body) {
		t.Errorf("an id naming no live node: %d %s, want 404 call_not_found", st, body)
	}

	// A second call on A; A dies: on B its id is not found, for a hang-up and for a sideband.
	c2 := newRTCClient(t)
	loc2 := c2.call(t, a, a.jwt("rtc-any-node-2", "acme"))
	c2.until(t, "session.created", 10*time.Second)
	a.kill9()
	if st, body := b.do("DELETE", loc2, "", nil); !notFound(st, body) {
		t.Errorf("DELETE on B of a call on the dead A: %d %s, want 404 call_not_found", st, body)
	}
	_, resp, err := websocket.Dial(ctxT(t, 10*time.Second), b.WSBase+"/v1/realtime?call_id="+strings.TrimPrefix(loc2, "/v1/realtime/calls/"),
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + b.Token}}})
	if st, name := refusalOf(resp); err == nil || st != 404 || name != "call_not_found" {
		t.Errorf("sideband on B for a call on the dead A: %v %d %q, want 404 call_not_found", err, st, name)
	}
	b.stop()
}
