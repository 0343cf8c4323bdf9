package rtc

import (
	"github.com/pion/webrtc/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/audio/opus"
)

// metrics are the calls' mic-track series, summed over every call (no per-call labels); the
// Endpoint owns them, Collectors hands them to a registry.
type metrics struct {
	received  prometheus.Counter     // RTP packets received (pion's stats interceptor)
	lost      prometheus.Counter     // RTP packets lost (RFC 3550 cumulative, pion's stats)
	jitter    prometheus.Histogram   // interarrival jitter (RFC 3550, seconds), sampled per call
	concealed *prometheus.CounterVec // frames concealed by the reader, by how: fec, plc
	gap       prometheus.Counter     // silence put in for RTP timestamp gaps (DTX, pauses)
	tooLarge  *prometheus.CounterVec // data-channel messages over a side's max-message-size, by way: in, out
	excess    prometheus.Counter     // mic frames dropped: the peer sent audio faster than real time
}

func newMetrics() *metrics {
	return &metrics{
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "voiced_webrtc_inbound_packets_total",
			Help: "RTP packets received on the calls' mic tracks (pion's stats)."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "voiced_webrtc_inbound_packets_lost_total",
			Help: "RTP packets the calls' mic tracks never received (RFC 3550 expected − received, pion's stats); a late packet that arrives is not lost."}),
		jitter: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "voiced_webrtc_inbound_jitter_seconds",
			Help:    "The mic track's RTP interarrival jitter (RFC 3550, pion's stats), one sample per call every 5 s of packets and at its end.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 10)}),
		concealed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voiced_webrtc_inbound_concealed_frames_total",
			Help: "Mic frames lost and concealed by the call's reader, by how: fec (from the next packet's in-band FEC), plc (libopus's concealment; also a packet that does not decode)."},
			[]string{"by"}),
		gap: prometheus.NewCounter(prometheus.CounterOpts{Name: "voiced_webrtc_inbound_gap_seconds_total",
			Help: "Silence put into the calls' mic audio for RTP timestamp gaps no packet covered (DTX, a paused sender, the rest of a long loss)."}),
		tooLarge: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voiced_webrtc_events_too_large_total",
			Help: "oai-events messages over a max-message-size, by way: in (a peer's message over the answer's 262144 bytes, dropped and refused with an invalid_event error), out (a server event over the peer's a=max-message-size, replaced by an event_too_large error)."},
			[]string{"way"}),
		excess: prometheus.NewCounter(prometheus.CounterOpts{Name: "voiced_webrtc_inbound_excess_frames_total",
			Help: "Mic frames dropped undecoded because the peer sent audio faster than real time (beyond a 1 s burst)."}),
	}
}

// Collectors returns the calls' series for a Prometheus registry.
func (e *Endpoint) Collectors() []prometheus.Collector {
	m := e.metrics
	return []prometheus.Collector{m.received, m.lost, m.jitter, m.concealed, m.gap, m.tooLarge, m.excess}
}

func (m *metrics) silence(samples int) { m.gap.Add(float64(samples) / opus.SampleRate) }

// inboundSeen is what a call last took from pion's stats for one mic stream; owned by supervise.
type inboundSeen struct {
	received uint32
	lost     int32
}

// sampleStats adds what pion's stats counted since the last sample to the series.
func (c *Call) sampleStats(seen map[webrtc.SSRC]inboundSeen) {
	for _, s := range c.pc.GetStats() {
		in, ok := s.(webrtc.InboundRTPStreamStats)
		if !ok || in.Kind != webrtc.RTPCodecTypeAudio.String() {
			continue
		}
		last := seen[in.SSRC]
		if in.PacketsReceived <= last.received {
			continue // nothing new: an idle stream's jitter is not sampled again
		}
		c.m.received.Add(float64(in.PacketsReceived - last.received))
		if in.PacketsLost > last.lost { // RFC 3550's count can fall (duplicates)
			c.m.lost.Add(float64(in.PacketsLost - last.lost))
			last.lost = in.PacketsLost
		}
		last.received = in.PacketsReceived
		c.m.jitter.Observe(in.Jitter)
		seen[in.SSRC] = last
	}
}
