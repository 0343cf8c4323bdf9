package tests

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/internal/realtimeclient"
)

// BenchmarkAnswerWebRTCvsWebSocket measures, on one fixture-mounted server, the same spoken turn
// over both transports: from the last 20 ms frame of speech sent (paced in real time, silence
// after it) to the first reply audio received — the first response.output_audio.delta on the
// socket, the first RTP packet of the reply on the call's track. It reports the medians and their
// difference (what WebRTC adds or saves). Run: eval "$(make -s env)"; go test -run '^$' -bench
// AnswerWebRTC -benchtime 5x ./tests
func BenchmarkAnswerWebRTCvsWebSocket(b *testing.B) {
	s := startServer(b, serverOpts{Args: []string{"--max-conversations", "4", "--max-per-tenant", "4"}})
	speech := espeakSpeech(b, "What is the weather like today?")
	silence := make([]int16, 24000*3)
	var wsMs, rtcMs []float64
	for i := 0; i < b.N; i++ {
		wsMs = append(wsMs, wsAnswer(b, s, speech, silence))
		rtcMs = append(rtcMs, rtcAnswer(b, s, speech, silence))
	}
	med := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(med(wsMs), "ws-answer-ms")
	b.ReportMetric(med(rtcMs), "webrtc-answer-ms")
	b.ReportMetric(med(rtcMs)-med(wsMs), "webrtc-added-ms")
	b.Logf("websocket %v ms; webrtc %v ms", wsMs, rtcMs)
	s.stop()
}

// wsAnswer speaks one turn on a new socket and returns speech end → first audio delta, in ms.
func wsAnswer(b *testing.B, s *server, speech, silence []int16) float64 {
	conn, err := realtimeclient.Dial(ctxT(b, 30*time.Second), s.WSBase+"/v1/realtime?model=m",
		realtimeclient.Options{Bearer: s.mintGA(b, s.jwt("bench-ws", "acme"))})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	first := make(chan time.Time, 1)
	go func() {
		for {
			ev, err := conn.Next(ctxT(b, 60*time.Second))
			if err != nil {
				return
			}
			if ev.Type == "response.output_audio.delta" {
				select {
				case first <- time.Now():
				default:
				}
			}
		}
	}()
	frame := 480 // 20 ms at 24 kHz
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var end time.Time
	all := append(append([]int16(nil), speech...), silence...)
	for at := 0; at+frame <= len(all); at += frame {
		<-tick.C
		if err := conn.Send(ctxT(b, 10*time.Second), realtimeclient.AppendEvent(audio.Int16ToBytes(all[at:at+frame]))); err != nil {
			b.Fatal(err)
		}
		if at+frame >= len(speech) && end.IsZero() {
			end = time.Now()
		}
		select {
		case got := <-first:
			return float64(got.Sub(end).Microseconds()) / 1000
		default:
		}
	}
	select {
	case got := <-first:
		return float64(got.Sub(end).Microseconds()) / 1000
	case <-time.After(20 * time.Second):
		b.Fatal("no reply audio on the socket")
	}
	return 0
}

// rtcAnswer speaks one turn on a new call and returns speech end → first reply packet, in ms.
func rtcAnswer(b *testing.B, s *server, speech, silence []int16) float64 {
	c := newRTCClient(b)
	loc := c.call(b, s, s.mintGA(b, s.jwt("bench-rtc", "acme")))
	defer s.do("DELETE", loc, "", nil)
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	all := append(append([]int16(nil), speech...), silence...)
	pcm := audio.Float32ToInt16(audio.Resample(audio.Int16ToFloat32(all), 24000, 48000))
	speechEnd := len(speech) * 2
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var end time.Time
	before := 0
	for i := 0; (i+1)*opus.FrameSamples <= len(pcm); i++ {
		<-tick.C
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			b.Fatal(err)
		}
		c.mic.WriteSample(media.Sample{Data: p, Duration: 20 * time.Millisecond})
		if (i+1)*opus.FrameSamples >= speechEnd && end.IsZero() {
			end = time.Now()
			c.mu.Lock()
			before = c.packets
			c.mu.Unlock()
		}
		if !end.IsZero() {
			c.mu.Lock()
			n, at := c.packets, c.lastAt
			c.mu.Unlock()
			if n > before {
				return float64(at.Sub(end).Microseconds()) / 1000
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		n, at := c.packets, c.lastAt
		c.mu.Unlock()
		if n > before {
			return float64(at.Sub(end).Microseconds()) / 1000
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatal("no reply audio on the call's track")
	return 0
}
