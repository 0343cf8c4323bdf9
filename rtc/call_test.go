package rtc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/opus"
	"github.com/voiced/voiced/internal/testkit"
)

// speech16k is silero-vad-go's recording (float32 LE, 16 kHz).
func speech16k(t testing.TB) []float32 {
	t.Helper()
	dir := os.Getenv("VOICED_SILERO_TESTFILES")
	if dir == "" {
		t.Skip("VOICED_SILERO_TESTFILES unset: run through make or eval \"$(make -s env)\"")
	}
	data, err := os.ReadFile(filepath.Join(dir, "samples.pcm"))
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]float32, len(data)/4)
	for i := range pcm {
		pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return pcm
}

func bestCorrelation(a, b []float32, maxLag int) float64 {
	best := -1.0
	for lag := 0; lag <= maxLag; lag++ {
		var ab, aa, bb float64
		for i := 0; i+lag < len(b) && i < len(a); i++ {
			x, y := float64(a[i]), float64(b[i+lag])
			ab += x * y
			aa += x * x
			bb += y * y
		}
		if aa > 0 && bb > 0 {
			best = max(best, ab/math.Sqrt(aa*bb))
		}
	}
	return best
}

// client is a pion peer as a browser would be: an Opus track out, the oai-events channel, and
// the reply track decoded.
type client struct {
	pc     *webrtc.PeerConnection
	dc     *webrtc.DataChannel
	track  *webrtc.TrackLocalStaticSample
	dcOpen chan struct{}
	msgs   chan []byte

	mu       sync.Mutex
	packets  int
	received []float32 // decoded reply audio, 48 kHz
	rx       []rxPacket
	first    time.Time
	last     time.Time
	wg       sync.WaitGroup
}

// rxPacket is one packet received on the reply's track, decoded.
type rxPacket struct {
	rtpTime uint32
	pcm     []int16 // its 20 ms at 48 kHz
}

func newClient(t *testing.T) *client { return newClientWith(t, nil) }

// newClientWith is newClient with its SettingEngine adjusted by tune (nil: as it is).
func newClientWith(t *testing.T, tune func(*webrtc.SettingEngine)) *client {
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
	api := webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{pc: pc, dcOpen: make(chan struct{}), msgs: make(chan []byte, 16)}
	c.track, err = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic", "client")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.AddTrack(c.track); err != nil {
		t.Fatal(err)
	}
	c.dc, err = pc.CreateDataChannel("oai-events", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.dc.OnOpen(func() { close(c.dcOpen) })
	c.dc.OnMessage(func(m webrtc.DataChannelMessage) { c.msgs <- m.Data })
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			dec, _ := opus.NewDecoder()
			defer dec.Close()
			for {
				p, _, err := tr.ReadRTP()
				if err != nil {
					return
				}
				pcm, err := dec.Decode(p.Payload)
				if err != nil {
					continue
				}
				c.mu.Lock()
				if c.packets == 0 {
					c.first = time.Now()
				}
				c.last = time.Now()
				c.packets++
				c.received = append(c.received, audio.Int16ToFloat32(pcm)...)
				c.rx = append(c.rx, rxPacket{rtpTime: p.Timestamp, pcm: append([]int16(nil), pcm...)}) // pcm is the decoder's buffer
				c.mu.Unlock()
			}
		}()
	})
	return c
}

func (c *client) offer(t *testing.T) string {
	t.Helper()
	o, err := c.pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := webrtc.GatheringCompletePromise(c.pc)
	if err := c.pc.SetLocalDescription(o); err != nil {
		t.Fatal(err)
	}
	<-g
	return c.pc.LocalDescription().SDP
}

func (c *client) close() {
	c.pc.Close()
	c.wg.Wait()
}

// sendSpeech writes 16 kHz speech as 20 ms Opus packets, paced.
func (c *client) sendSpeech(t *testing.T, pcm16k []float32) {
	enc, err := opus.NewEncoder(32000)
	if err != nil {
		t.Error(err)
		return
	}
	defer enc.Close()
	pcm := audio.Float32ToInt16(audio.Resample(pcm16k, 16000, 48000))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; (i+1)*opus.FrameSamples <= len(pcm); i++ {
		<-tick.C
		p, err := enc.Encode(pcm[i*opus.FrameSamples : (i+1)*opus.FrameSamples])
		if err != nil {
			t.Error(err)
			return
		}
		if err := c.track.WriteSample(media.Sample{Data: p, Duration: 20 * time.Millisecond}); err != nil {
			return
		}
	}
}

type owner struct {
	mu     sync.Mutex
	audio  []float32
	events chan []byte
	output chan bool
	closed chan error
}

func newOwner() *owner {
	return &owner{events: make(chan []byte, 16), output: make(chan bool, 16), closed: make(chan error, 1)}
}

func (o *owner) handlers() Handlers {
	return Handlers{
		Audio: func(p []float32) {
			o.mu.Lock()
			o.audio = append(o.audio, p...)
			o.mu.Unlock()
		},
		Event:  func(m []byte) { o.events <- m },
		Output: func(s bool) { o.output <- s },
		Closed: func(err error) { o.closed <- err },
	}
}

func connect(t *testing.T, cfg Config) (*Endpoint, *client, *owner, *Call) {
	t.Helper()
	o := newOwner()
	ep, cl, call := connectWith(t, cfg, o.handlers(), nil)
	return ep, cl, o, call
}

// connectWith answers a client's offer with handlers h; the client is given mangle(answer)
// (nil: the answer as it is).
func connectWith(t *testing.T, cfg Config, h Handlers, mangle func(string) string) (*Endpoint, *client, *Call) {
	t.Helper()
	ep, err := NewEndpoint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answer, call, err := ep.Answer(ctx, cl.offer(t), h)
	if err != nil {
		t.Fatal(err)
	}
	if mangle != nil {
		answer = mangle(answer)
	}
	if err := cl.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cl.dcOpen:
	case <-time.After(10 * time.Second):
		t.Fatal("data channel did not open")
	}
	return ep, cl, call
}

func TestCallMediaAndEvents(t *testing.T) {
	testkit.CheckLeaks(t)
	speech := speech16k(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()

	// Events both ways.
	if err := cl.dc.SendText(`{"type":"session.update"}`); err != nil {
		t.Fatal(err)
	}
	if m := <-o.events; string(m) != `{"type":"session.update"}` {
		t.Fatalf("event in: %q", m)
	}
	if err := call.Send([]byte(`{"type":"session.created"}`)); err != nil {
		t.Fatal(err)
	}
	if m := <-cl.msgs; string(m) != `{"type":"session.created"}` {
		t.Fatalf("event out: %q", m)
	}

	// Mic audio in: 3 s of speech arrives decoded at 16 kHz and correlates.
	in := speech[:3*16000]
	cl.sendSpeech(t, in)
	// Reply audio out: 1 s of speech at 24 kHz, paced, then stopped.
	reply := audio.Resample(speech[16000:2*16000], 16000, OutputRate)
	start := time.Now()
	if err := call.Play(context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	if s := <-o.output; !s {
		t.Fatal("first output report is not started")
	}
	if s := <-o.output; s {
		t.Fatal("second output report is not stopped")
	}
	elapsed := time.Since(start)
	if p := call.Played(); p != int64(len(reply)) {
		t.Fatalf("played %d samples, want %d", p, len(reply))
	}
	want := len(reply) / outFrame
	waitFor(t, func() bool { cl.mu.Lock(); defer cl.mu.Unlock(); return cl.packets >= want })
	// Paced: the pacer cannot finish 1 s of audio in much less than 1 s (20 ms per packet).
	if elapsed < 900*time.Millisecond {
		t.Fatalf("1 s of reply played in %v: not paced", elapsed)
	}
	cl.mu.Lock()
	got := append([]float32(nil), cl.received...)
	span := cl.last.Sub(cl.first)
	cl.mu.Unlock()
	t.Logf("reply: %d packets over %v (sent in %v)", want, span, elapsed)
	if c := bestCorrelation(audio.Resample(reply, OutputRate, 48000), got, 2000); c < 0.8 {
		t.Fatalf("reply audio at the client correlates %.3f, want >= 0.8", c)
	}

	o.mu.Lock()
	heard := append([]float32(nil), o.audio...)
	o.mu.Unlock()
	if len(heard) < len(in)*9/10 {
		t.Fatalf("heard %d samples of %d", len(heard), len(in))
	}
	if c := bestCorrelation(in, heard, 1600); c < 0.8 {
		t.Fatalf("mic audio correlates %.3f, want >= 0.8", c)
	}
	t.Logf("mic: %d of %d samples", len(heard), len(in))

	if err := call.Close(); !errors.Is(err, ErrCallClosed) {
		t.Fatalf("Close: %v, want ErrCallClosed", err)
	}
	if err := <-o.closed; !errors.Is(err, ErrCallClosed) {
		t.Fatalf("Closed: %v", err)
	}
	if err := call.Send([]byte("x")); !errors.Is(err, ErrCallClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polling; no synchronisation depends on it
	}
}

func TestCallClearStopsPlayback(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	reply := tone(2 * OutputRate)
	if err := call.Play(context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	<-o.output // started
	waitFor(t, func() bool { return call.Played() >= 10*outFrame })
	played := call.Clear()
	if s := <-o.output; s {
		t.Fatal("no stopped after Clear")
	}
	if played <= 0 || played >= int64(len(reply)) || played%outFrame != 0 {
		t.Fatalf("Clear reported %d played of %d", played, len(reply))
	}
	if p := call.Played(); p != played {
		t.Fatalf("played grew after Clear: %d -> %d", played, p)
	}
	// The client gets exactly the packets played, one per 480 samples, told from the silence
	// tail that follows them by their RTP timestamps (the reply's are the first played×2 samples
	// of the 48 kHz timeline); everything after them is the tail, quiet.
	want := int(played / outFrame)
	waitFor(t, func() bool { cl.mu.Lock(); defer cl.mu.Unlock(); return len(cl.rx) >= want+CutTailPackets })
	cl.mu.Lock()
	rx := append([]rxPacket(nil), cl.rx...)
	cl.mu.Unlock()
	got := 0
	for _, p := range rx {
		if p.rtpTime-rx[0].rtpTime < uint32(2*played) {
			got++
		}
	}
	if got != want {
		t.Fatalf("client got %d packets of the reply, %d samples played = %d packets", got, played, want)
	}
	checkLoud(t, "reply", rx[:got])
	checkTail(t, "after Clear", rx[got:], lookahead(t))
	call.Close()
}

func TestCallICENeverConnects(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, err := NewEndpoint(Config{ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	cl := newClient(t)
	offer := cl.offer(t)
	cl.close() // the client goes away before ICE
	o := newOwner()
	_, call, err := ep.Answer(context.Background(), offer, o.handlers())
	if err != nil {
		t.Fatal(err)
	}
	<-call.Done()
	if err := <-o.closed; !errors.Is(err, ErrICETimeout) {
		t.Fatalf("Closed: %v, want ErrICETimeout", err)
	}
	if err := call.Close(); !errors.Is(err, ErrICETimeout) {
		t.Fatalf("Close: %v", err)
	}
}

func TestAnswerRefusesOfferWithoutOpus(t *testing.T) {
	ep, err := NewEndpoint(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	noAudio := "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\n"
	if _, _, err := ep.Answer(context.Background(), noAudio, Handlers{}); !errors.Is(err, ErrNoAudio) {
		t.Fatalf("Answer: %v, want ErrNoAudio", err)
	}
}

func TestCallPeerVanishes(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{DisconnectedTimeout: 300 * time.Millisecond, FailedTimeout: 600 * time.Millisecond})
	defer ep.Close()
	cl.close() // the peer disappears without a word
	<-call.Done()
	if err := <-o.closed; !errors.Is(err, ErrICEFailed) {
		t.Fatalf("Closed: %v, want ErrICEFailed", err)
	}
}

func TestCallOverUDPAndTCPMux(t *testing.T) {
	testkit.CheckLeaks(t)
	udp, tcp := freePort(t, "udp"), freePort(t, "tcp")
	ep, cl, _, call := connect(t, Config{UDPMuxPort: udp, TCPMuxPort: tcp, PublicIPs: []string{"127.0.0.1"}})
	defer ep.Close()
	defer cl.close()
	sdp := call.pc.LocalDescription().SDP
	if !strings.Contains(sdp, fmt.Sprintf(" %d typ host", udp)) || !strings.Contains(sdp, fmt.Sprintf(" %d typ host tcptype passive", tcp)) {
		t.Fatalf("answer does not advertise the mux ports %d/udp %d/tcp:\n%s", udp, tcp, sdp)
	}
	if err := call.Send([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m := <-cl.msgs; string(m) != "hi" {
		t.Fatalf("got %q", m)
	}
	call.Close()
}

func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
