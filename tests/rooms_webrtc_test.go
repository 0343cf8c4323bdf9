package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
)

// speakMarked is rtcClient.speak that returns when the 20 ms packet holding sample mark (24 kHz)
// was written to the microphone track.
func (c *rtcClient) speakMarked(t testing.TB, pcm24k []int16, mark int) time.Time {
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Error(err)
		return time.Time{}
	}
	defer enc.Close()
	pcm := audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(pcm24k), 24000, 48000))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var at time.Time
	for i := 0; (i+1)*opus.FrameSamples <= len(pcm); i++ {
		<-tick.C
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Error(err)
			return at
		}
		if at.IsZero() && (i+1)*opus.FrameSamples > 2*mark {
			at = time.Now()
		}
		if c.mic.WriteSample(media.Sample{Data: p, Duration: 20 * time.Millisecond}) != nil {
			return at
		}
	}
	return at
}

// TestRoomsStopWebRTC (issue 22 Proof, real interruptions, WebRTC): "stop, wait, stop that"
// (espeak-ng voices) spoken on a pion client's microphone into a reply playing on the server's
// track, under voiced.interruption {min_duration_ms 400} (no word count: over Opus the fixture
// codec's tones are not placed on the turn window, see rooms_align_test.go, so this is the
// duration rule; the words' rule is TestRoomsStopWaitCutsWS): every trial speech_started,
// response.done cancelled. Output stop (logged, not asserted) = the arrival of the last
// energetic RTP packet of the reply − the send of the packet holding the speech's first sample.
// make test: two voices; VOICED_ROOMS_FULL=1: eight voices × 3 (24 trials).
func TestRoomsStopWebRTC(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	s := startRealtime(t, serverOpts{})
	voices := stopVoices()
	rounds := 1
	if os.Getenv("VOICED_ROOMS_FULL") != "" {
		rounds = 3
	}
	c, item := roomCallRTC(t, s, "rtc-stop", 400, 4)
	var stops []time.Duration
	for range rounds {
		for _, v := range voices {
			speech := peakTo(trimSilence(espeakVoice(t, v, "stop, wait, stop that", 150)), 0.5)
			c.dc.SendText(string(item)) // the last user message is the long one (the mind answers it)
			c.until(t, "conversation.item.done", 10*time.Second)
			c.dc.SendText(`{"type":"response.create"}`)
			c.until(t, "output_audio_buffer.started", 30*time.Second)
			time.Sleep(time.Second)
			lead := silence24k(0.2)
			at := c.speakMarked(t, append(append(lead, speech...), silence24k(1.2)...), len(lead))
			evs := c.until(t, "response.done", 60*time.Second)
			time.Sleep(1500 * time.Millisecond) // the cut tail and the turn's events
			c.mu.Lock()
			var last time.Time
			for _, p := range c.rx {
				if p.rms >= energetic && p.at.After(last) {
					last = p.at
				}
			}
			c.mu.Unlock()
			started := 0
			var done map[string]any
			for _, e := range evs {
				switch e["type"] {
				case "input_audio_buffer.speech_started":
					started++
				case "response.done":
					done = e
				}
			}
			status := done["response"].(map[string]any)["status"]
			stop := last.Sub(at)
			t.Logf("stop, wait (%s): speech_started %d, response.done %v; the last energetic packet %v after the speech's first was sent",
				v, started, status, stop.Round(time.Millisecond))
			if started != 1 || status != "cancelled" {
				t.Errorf("stop, wait (%s): %d speech_started, response.done %v; want 1, cancelled", v, started, status)
				continue
			}
			stops = append(stops, stop)
		}
	}
	logStops(t, "WebRTC", stops)
	s.stop()
}

// TestRoomsNoiseResumesWebRTC (issue 22 Proof, noise and backchannels, WebRTC): the noise corpus
// (cough, knocks, keyboard, backchannels) spoken on a pion client's microphone 1 s into a reply
// playing on the server's track, under voiced.interruption {min_duration_ms 4000} (the duration
// rule: over Opus the fixture's words are not placed on the turn window): no speech_started,
// cleared or truncated, response.done completed, and the track carried as many packets as the
// same reply unpaused plus the 10-packet silence tail of each pause (rtc.CutTailPackets), none
// twice (sequence numbers unique), every energetic one of the reply (a tail's first packet may
// carry the encoder's fade: at most one more per tail). The backchannels must be heard (paused).
func TestRoomsNoiseResumesWebRTC(t *testing.T) {
	checkLeaks(t)
	needFlag(t, "jwt-secret-file", "webrtc")
	s := startRealtime(t, serverOpts{Args: []string{"--log-level", "debug"}})
	corpus := noiseCorpus(t, s)
	c, item := roomCallRTC(t, s, "rtc-noise", 4000, 3)
	// reply plays one reply with sound (nil: none) spoken into it; it returns the reply's events
	// and its packets: energetic ones, all, and whether a sequence number came twice.
	reply := func(sound []int16) (evs []map[string]any, energ, all int, dup bool) {
		c.dc.SendText(string(item))
		c.until(t, "conversation.item.done", 10*time.Second)
		c.mu.Lock()
		from := len(c.rx)
		c.mu.Unlock()
		c.dc.SendText(`{"type":"response.create"}`)
		evs = c.until(t, "output_audio_buffer.started", 30*time.Second)
		if sound != nil {
			time.Sleep(time.Second)
			c.speakMarked(t, append(append(silence24k(0.2), sound...), silence24k(1.2)...), 0)
		}
		evs = append(evs, c.until(t, "output_audio_buffer.stopped", 60*time.Second)...)
		time.Sleep(300 * time.Millisecond)
		c.mu.Lock()
		seen := map[uint16]bool{}
		for _, p := range c.rx[from:] {
			all++
			if p.rms >= energetic {
				energ++
			}
			dup = dup || seen[p.seq]
			seen[p.seq] = true
		}
		c.mu.Unlock()
		return evs, energ, all, dup
	}
	_, wholeE, wholeAll, _ := reply(nil)
	t.Logf("the whole reply: %d packets, %d energetic", wholeAll, wholeE)
	heard := 0
	for _, snd := range corpus {
		before := s.logs.count(resumedLog)
		evs, e, all, dup := reply(snd.pcm)
		paused := s.logs.count(resumedLog) - before
		heard += min(paused, 1)
		status := ""
		bad := 0
		for _, ev := range evs {
			switch ev["type"] {
			case "input_audio_buffer.speech_started", "output_audio_buffer.cleared", "conversation.item.truncated":
				bad++
			case "response.done":
				status, _ = ev["response"].(map[string]any)["status"].(string)
			}
		}
		tails := all - wholeAll
		t.Logf("%-36s heard as speech and resumed %d×; response.done %s; %d packets (%d energetic, the whole reply's %d), %d over it",
			snd.name, paused, status, all, e, wholeE, tails)
		// A pause adds its 10-packet tail; the tail's first packet may carry the encoder's fade (energetic).
		if bad != 0 || status != "completed" || e < wholeE || e > wholeE+tails/10 || dup || tails < 0 || tails%10 != 0 {
			t.Errorf("%s: %d turn events, response.done %s, %d energetic packets of %d, duplicates %v, %d packets over the whole reply; want none, completed, all (one more per tail at most), no, a multiple of 10",
				snd.name, bad, status, e, wholeE, dup, tails)
		}
		if isBackchannel(snd.name) && paused == 0 {
			t.Errorf("%s: the server never heard the backchannel as speech: the test proves nothing for it", snd.name)
		}
		if paused > 0 && tails == 0 {
			t.Errorf("%s: judged with no pause on the track (no silence tail): the reply played on over the speech", snd.name)
		}
	}
	t.Logf("%d of %d sounds were heard as speech, paused the reply and resumed it", heard, len(corpus))
	s.stop()
}

// roomCallRTC opens a pion call for the rooms corpus: server_vad as roomVAD without responses of
// its own, voiced.interruption {min_duration_ms: minMs}; item is the conversation.item.create of
// a user message whose answer (the echo mind) is sentences long.
func roomCallRTC(t *testing.T, s *server, name string, minMs, sentences int) (c *rtcClient, item []byte) {
	t.Helper()
	c = newRTCClient(t)
	c.call(t, s, s.mintGA(t, s.jwt(name, "acme")))
	c.until(t, "session.created", 10*time.Second)
	td := roomVAD()
	td["create_response"] = false
	upd, _ := json.Marshal(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio":  map[string]any{"input": map[string]any{"turn_detection": td}},
		"voiced": map[string]any{"interruption": map[string]any{"min_duration_ms": minMs}}}})
	c.dc.SendText(string(upd))
	c.until(t, "session.updated", 10*time.Second)
	var long strings.Builder
	for i := 1; i <= sentences; i++ {
		fmt.Fprintf(&long, "This is sentence number %d of a long answer. ", i)
	}
	item, _ = json.Marshal(map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": long.String()}}}})
	return c, item
}
