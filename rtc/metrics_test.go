package rtc

import (
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/internal/testkit"
)

// TestCallLossMetrics: a lossy peer (two packets lost alone, three in a row, a 200 ms DTX pause)
// moves the calls' series by exactly what happened: pion's stats count the packets received and
// lost, the reader counts the frames concealed (FEC for a lone loss and a burst's last frame, PLC
// for the rest) and the silence put in.
func TestCallLossMetrics(t *testing.T) {
	testkit.CheckLeaks(t)
	speech := speech16k(t)
	mic, o, ep, done := rtpCall(t, Config{})
	defer done()
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	const frames, pause = 100, 10 // 2 s of speech with a 200 ms DTX pause after frame 80
	lost := map[int]bool{20: true, 50: true, 70: true, 71: true, 72: true}
	pcm := audio.Float32ToInt16(audio.Resample(speech[:frames*320], 16000, opus.SampleRate))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	ts := 0
	for i := range frames {
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Fatal(err)
		}
		<-tick.C
		if i == 80 {
			for range pause {
				<-tick.C
			}
			ts += pause * opus.FrameSamples
		}
		if !lost[i] {
			if err := mic.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(300 + i),
				Timestamp: uint32(ts), SSRC: 1}, Payload: p}); err != nil {
				t.Fatal(err)
			}
		}
		ts += opus.FrameSamples
	}
	want := (frames + pause) * opus.FrameSamples
	waitFor(t, func() bool { return o.heardSamples() >= want })
	done() // the call's end adds its last stats sample
	m := ep.metrics
	got := map[string]float64{
		"received": counterValue(t, m.received),
		"lost":     counterValue(t, m.lost),
		"fec":      counterValue(t, m.concealed.WithLabelValues("fec")),
		"plc":      counterValue(t, m.concealed.WithLabelValues("plc")),
		"gap ms":   1000 * counterValue(t, m.gap),
	}
	t.Logf("series after the call: %v; heard %d samples", got, o.heardSamples())
	for name, w := range map[string]float64{"received": frames - 5, "lost": 5, "fec": 3, "plc": 2, "gap ms": pause * 20} {
		if got[name] != w {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
	if n := jitterSamples(t, ep); n < 1 {
		t.Errorf("jitter observed %d times, want at least the call's end", n)
	}
}

func jitterSamples(t *testing.T, ep *Endpoint) uint64 {
	t.Helper()
	var m dto.Metric
	if err := ep.metrics.jitter.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
