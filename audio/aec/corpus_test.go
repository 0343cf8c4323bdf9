package aec_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/voiced/voiced/audio/aec"
	"github.com/voiced/voiced/speechcore/runtime"
	"github.com/voiced/voiced/speechcore/squelch"
	"github.com/voiced/voiced/turn"
)

// The self-voice corpus (issue 22, Proof): 20 replies, each a real recording or espeak-ng's voice
// standing for the agent's, played into the microphone through a room sox simulates (a delay,
// an attenuation, a reverb) while the user is silent, over a little microphone hiss. Built at
// test time from Debian's pocketsphinx-testdata and espeak-ng; nothing is committed.

const psData = "/usr/share/pocketsphinx/test/data"

// room is one simulated echo path: the reply reaches the microphone delayMs late, gainDB
// quieter, with sox's reverb at reverb %.
type room struct {
	delayMs int
	gainDB  float64
	reverb  int
}

var rooms = []room{{60, -6, 30}, {120, -3, 50}, {200, -8, 70}, {90, 0, 40}, {160, -4, 60}}

var espeakLines = []string{
	"Sure, I can help you with that. Let me look up the details for your order.",
	"The weather tomorrow will be sunny with a high of twenty three degrees.",
	"Your appointment is confirmed for Tuesday at three in the afternoon.",
	"I'm sorry, I didn't catch that. Could you say it again please?",
	"There are three trains to the city this evening, the first leaves at six.",
	"Of course. The total comes to forty two dollars and fifty cents.",
	"The museum is open every day except Monday, from ten until six.",
	"Let me transfer you to someone who can answer that question.",
	"Your package left the warehouse this morning and should arrive on Friday.",
	"The recipe needs two cups of flour, one egg and a pinch of salt.",
	"I have booked a table for four people at eight o'clock tonight.",
	"The nearest pharmacy is two blocks north, on the corner of Main Street.",
	"Thanks for waiting. I found two flights that match your dates.",
	"Remember to bring your passport and the printed confirmation.",
	"The meeting has been moved to Thursday morning at half past nine.",
}

// replies is the corpus' 20 replies at 16 kHz.
func replies(t testing.TB) [][]float32 {
	t.Helper()
	need(t, "sox")
	need(t, "espeak-ng")
	var out [][]float32
	for _, name := range []string{"goforward.raw", "something.raw", "numbers.raw"} {
		out = append(out, readRaw(t, filepath.Join(psData, name)))
	}
	for _, name := range []string{"sense_and_sensibility_01_austen_64kb-0870.wav", "sense_and_sensibility_01_austen_64kb-0880.wav"} {
		out = append(out, soxTo16k(t, "wav", readFile(t, filepath.Join(psData, "librivox", name))))
	}
	for _, line := range espeakLines {
		wav, err := exec.Command("espeak-ng", "--stdout", line).Output()
		if err != nil {
			t.Fatalf("espeak-ng: %v", err)
		}
		out = append(out, soxTo16k(t, "wav", wav))
	}
	return out
}

// echoOf plays reply through rm with sox and returns what the microphone hears, as long as the
// reply plus a second, with hiss at −60 dBFS. The delay comes before the reverb: sox's reverb
// makes two channels and delay with one position delays only the first, so the other way round
// the microphone also heard the reply undelayed at −6 dB (the corpus before h-gate).
func echoOf(t testing.TB, reply []float32, rm room) []float32 {
	t.Helper()
	args := []string{"-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", "-",
		"-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", "-",
		"pad", "0", "1", "delay", fmt.Sprintf("%.3f", float64(rm.delayMs)/1000), "reverb", strconv.Itoa(rm.reverb),
		"gain", fmt.Sprintf("%.1f", rm.gainDB-2), "trim", "0", fmt.Sprintf("%.4f", float64(len(reply))/16000+1)}
	cmd := exec.Command("sox", args...)
	cmd.Stdin = bytes.NewReader(pcm16(reply))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("sox %v: %v: %s", args, err, stderr.String())
	}
	mic := int16LE(raw)
	addHiss(mic, 12345)
	return mic
}

// addHiss adds the microphone's hiss (uniform, ±0.001: about −65 dBFS) to mic, from seed.
func addHiss(mic []float32, seed uint32) {
	for i := range mic {
		seed = seed*1664525 + 1013904223
		mic[i] += (float32(seed>>8)/float32(1<<24) - 0.5) * 0.002
	}
}

// cancel runs mic through a Filter fed reply as its reference, as the session does: the reply
// queued whole as it is sent (faster than real time), the microphone in 20 ms appends.
func cancel(t testing.TB, cfg aec.Config, reply, mic []float32) []float32 {
	t.Helper()
	f, err := aec.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clk := newRealTime(f)
	f.Far(reply)
	return clk.process(f, mic)[aec.Latency:]
}

// realTime is the clock of a full-duplex client streaming its microphone in real time while it
// plays what it was sent: the Filter's wall clock, advanced 20 ms by each 20 ms append (the
// test runs faster than real time, or slower under load, and must not depend on it).
type realTime struct{ t time.Time }

func newRealTime(f *aec.Filter) *realTime {
	c := &realTime{t: time.Unix(1e9, 0)}
	f.SetClock(func() time.Time { return c.t })
	return c
}

// process sends mic to f in 20 ms appends, each arriving as its last sample is recorded.
func (c *realTime) process(f *aec.Filter, mic []float32) []float32 {
	var out []float32
	for j := 0; j < len(mic); j += 320 {
		chunk := mic[j:min(j+320, len(mic))]
		c.t = c.t.Add(time.Duration(len(chunk)) * time.Second / aec.Rate)
		out = append(out, f.Process(chunk)...)
	}
	return out
}

func energyDB(x []float32) float64 {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return 10 * math.Log10(e/float64(max(len(x), 1))+1e-12)
}

// TestSelfVoiceCorpus: the agent's own voice through a room does not barge in with the
// canceller (zero speech_started in 20 replies, real Silero under server_vad's defaults), and
// does without it. The 20 replies are five conversations (one room each) of four replies, a
// second of silence after each: one Filter per conversation, as the session keeps one. The
// echo return loss enhancement is logged (LLM.md).
func TestSelfVoiceCorpus(t *testing.T) {
	speech := needModel(t)
	reps := replies(t)
	if len(reps) != 20 {
		t.Fatalf("corpus has %d replies, want 20", len(reps))
	}
	eng, _ := strconv.Atoi(os.Getenv("AEC_ENGINE"))
	ns, _ := strconv.Atoi(os.Getenv("AEC_NS"))
	noGuard := os.Getenv("AEC_NOGUARD") != ""
	guardDB, _ := strconv.ParseFloat(os.Getenv("AEC_GUARD_DB"), 64)
	cfg := aec.Config{Echo: true, Engine: aec.Engine(eng), SuppressDB: -ns, NoGuard: noGuard, GuardMarginDB: guardDB}
	bargeRaw, bargeAEC := 0, 0
	var erle []float64
	for c, rm := range rooms {
		f, err := aec.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		clk := newRealTime(f)
		var mics, cleans [][]float32
		for i := c; i < len(reps); i += len(rooms) {
			rep := reps[i]
			mic := echoOf(t, rep, rm)
			f.Far(rep)
			clean := clk.process(f, mic)
			clean = clean[aec.Latency:]
			mics, cleans = append(mics, mic[:len(clean)]), append(cleans, clean)
		}
		f.Close()
		for k := range mics {
			e := energyDB(mics[k]) - energyDB(cleans[k])
			erle = append(erle, e)
			nRaw, nAEC := starts(t, speech, mics[k]), starts(t, speech, cleans[k])
			bargeRaw += min(nRaw, 1)
			bargeAEC += nAEC
			t.Logf("conversation %d reply %d (%.1f s, room %+v): ERLE %.1f dB, speech_started raw %d, cancelled %d",
				c, k, float64(len(mics[k]))/16000, rm, e, nRaw, nAEC)
		}
	}
	t.Logf("self-voice (engine %d): replies that barged in without the canceller %d/20, speech_started with it %d; ERLE median %.1f dB",
		eng, bargeRaw, bargeAEC, median(erle))
	// Measured (LLM.md): WebRTC with the aligned reference and the per-band residual-echo gate
	// (default margin −2 dB) 0, median ERLE 33 dB; without the gate (AEC_NOGUARD=1) 5; without
	// the alignment 17 (the 48 ms filter cannot reach a 60–200 ms echo: ERLE 7.6 dB).
	if bargeAEC > 0 || median(erle) < 20 {
		t.Errorf("with the canceller the agent's own voice started %d turns (want 0) and the median ERLE is %.1f dB (at least 20)", bargeAEC, median(erle))
	}
	if bargeRaw < 15 {
		t.Errorf("without the canceller only %d/20 replies barged in: the corpus does not test the canceller", bargeRaw)
	}
}

// starts counts the speech_started events server_vad (Hush, OpenAI's defaults) gives on pcm.
func starts(t testing.TB, speech turn.Speech, pcm []float32) int {
	t.Helper()
	h, err := turn.NewHush(turn.DefaultHushConfig(speech))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < len(pcm); i += 320 {
		evs, err := h.Feed(pcm[i:min(i+320, len(pcm))], int64(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if st, ok := ev.(turn.SpeechStarted); ok {
				if os.Getenv("AEC_DEBUG") != "" {
					t.Logf("speech_started at %.2f s", float64(st.Start)/16000)
				}
				n++
			}
		}
	}
	return n
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// The real Silero model on the real ONNX Runtime, opened once for the package's tests.
var (
	testEnvErr  error
	testEnv     *runtime.Env
	sharedModel *squelch.Model
)

func TestMain(m *testing.M) {
	var env *runtime.Env
	if lib := runtime.LibPathFromEnv(); lib != "" && os.Getenv("VOICED_SILERO_MODEL") != "" {
		env, testEnvErr = runtime.Open(runtime.Config{LibPath: lib})
		testEnv = env
		if testEnvErr == nil {
			sharedModel, testEnvErr = squelch.Load(env, os.Getenv("VOICED_SILERO_MODEL"))
		}
	}
	code := m.Run()
	if sharedModel != nil {
		sharedModel.Close()
	}
	if env != nil {
		env.Close()
	}
	os.Exit(code)
}

func needModel(t testing.TB) turn.Speech {
	t.Helper()
	if testEnvErr != nil {
		t.Fatalf("open onnx runtime / silero model: %v", testEnvErr)
	}
	if sharedModel == nil {
		t.Skip("VOICED_ORT_LIB and VOICED_SILERO_MODEL unset: run through make, or eval \"$(make -s env)\"")
	}
	return turn.SpeechFunc(func() (turn.Prober, error) {
		s, err := sharedModel.NewStream()
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

func need(t testing.TB, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed (scripts/install-deps.sh --test)", tool)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skip("pocketsphinx-testdata not installed (scripts/install-deps.sh --test)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readRaw(t testing.TB, path string) []float32 { return int16LE(readFile(t, path)) }

func soxTo16k(t testing.TB, typ string, in []byte) []float32 {
	t.Helper()
	cmd := exec.Command("sox", "-t", typ, "-", "-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", "-")
	cmd.Stdin = bytes.NewReader(in)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("sox: %v", err)
	}
	return int16LE(raw)
}

func int16LE(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = float32(int16(binary.LittleEndian.Uint16(b[i*2:]))) / 32768
	}
	return out
}

func pcm16(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		s := max(min(v*32767, 32767), -32768)
		binary.LittleEndian.PutUint16(b[i*2:], uint16(int16(s)))
	}
	return b
}

// TestInterruptionThroughEcho: a user who speaks over the agent's echo ("Stop, wait.", espeak-ng's
// female voice, above the echo's level at the microphone, 1.5 s into each reply) is still heard
// through the canceller (whose suppression also hides double talk): server_vad holds the floor
// within 200 ms of when it does on the words alone, in 19 of 20 replies (LLM.md).
func TestInterruptionThroughEcho(t *testing.T) {
	speech := needModel(t)
	reps := replies(t)
	user, onset := stopWait(t)
	eng, _ := strconv.Atoi(os.Getenv("AEC_ENGINE"))
	userGain := 1.5
	if g, err := strconv.ParseFloat(os.Getenv("AEC_USER"), 64); err == nil {
		userGain = g
	}
	// The detector's own latency on the words alone, in silence: the bound below adds to it.
	base := heldAlone(t, speech, user, onset, userGain)
	t.Logf("the words alone: held %.0f ms after they start", float64(base)/16)
	var echoes []float64
	for i, rep := range reps {
		echoes = append(echoes, energyDB(echoOf(t, rep, rooms[i%len(rooms)])))
	}
	t.Logf("levels: the words %.1f dBFS, the echo (whole reply) median %.1f dBFS", energyDB(user[onset:])+20*math.Log10(userGain), median(echoes))
	missed := 0
	var lat []float64
	for c, rm := range rooms {
		noGuard := os.Getenv("AEC_NOGUARD") != ""
		guardDB, _ := strconv.ParseFloat(os.Getenv("AEC_GUARD_DB"), 64)
		f, err := aec.New(aec.Config{Echo: true, Engine: aec.Engine(eng), NoGuard: noGuard, GuardMarginDB: guardDB})
		if err != nil {
			t.Fatal(err)
		}
		clk := newRealTime(f)
		for i := c; i < len(reps); i += len(rooms) {
			rep := reps[i]
			mic := echoOf(t, rep, rm)
			at := 24000 // 1.5 s
			for j, v := range user {
				if at+j < len(mic) {
					mic[at+j] += v * float32(userGain)
				}
			}
			f.Far(rep)
			clean := clk.process(f, mic)
			clean = clean[aec.Latency:]
			words := at + onset
			first := heldAfter(t, speech, clean, words)
			if first < 0 || first > base+200*16 {
				missed++
				t.Logf("conversation %d reply %d: the interruption was not heard within 300 ms (first %d, words at %d)", c, i, first, words)
				continue
			}
			lat = append(lat, float64(first)/16)
		}
		f.Close()
	}
	t.Logf("interruption through echo (engine %d): heard %d/20 within 200 ms of the words alone, detection latency median %.0f ms, max %.0f ms",
		eng, 20-missed, median(lat), maxOf(lat))
	// Measured (LLM.md): WebRTC 20/20 (with the extended filter 18/20: its suppressor eats the
	// onset of "Stop"); Speex 20/20 (its residual echo holds the floor already).
	if missed > 1 {
		t.Errorf("%d of 20 interruptions spoken over the echo were not heard within 200 ms of the words alone", missed)
	}
}

// TestInterruptionWithoutEcho: the same replies and "Stop, wait." at three levels, but no echo
// reaches the microphone (headphones, or a client that cancels its own echo: hiss alone while
// the reply plays), through the Filter a WebSocket session keeps by default. The residual-echo
// gate must not withhold the words as the echo of a reply nobody heard: before delayEst.noEcho
// it weighed them against the 0 dB echo path a band starts at, and heard 18, 15 and 11 of 20 at
// −19, −25 and −30 dBFS (19, 20, 20 with it; the one miss at −19 dBFS is the canceller's
// suppressor: the same without the gate).
func TestInterruptionWithoutEcho(t *testing.T) {
	speech := needModel(t)
	reps := replies(t)
	user, onset := stopWait(t)
	for _, gain := range []float64{1.5, 0.75, 0.4} {
		base := heldAlone(t, speech, user, onset, gain)
		missed := 0
		for c := range rooms {
			f, err := aec.New(aec.Config{Echo: true})
			if err != nil {
				t.Fatal(err)
			}
			clk := newRealTime(f)
			for i := c; i < len(reps); i += len(rooms) {
				rep := reps[i]
				mic := make([]float32, len(rep)+16000)
				addHiss(mic, 777)
				at := 24000
				for j, v := range user {
					if at+j < len(mic) {
						mic[at+j] += v * float32(gain)
					}
				}
				f.Far(rep)
				clean := clk.process(f, mic)[aec.Latency:]
				if first := heldAfter(t, speech, clean, at+onset); first < 0 || first > base+200*16 {
					missed++
					t.Logf("words at %.1f dBFS, conversation %d reply %d: not heard within 200 ms of the words alone (first %d)",
						energyDB(user[onset:])+20*math.Log10(gain), c, i, first)
				}
			}
			f.Close()
		}
		t.Logf("without echo, the words at %.1f dBFS: heard %d/20", energyDB(user[onset:])+20*math.Log10(gain), 20-missed)
		if missed > 1 {
			t.Errorf("the words at %.1f dBFS with no echo: %d of 20 not heard within 200 ms of the words alone", energyDB(user[onset:])+20*math.Log10(gain), missed)
		}
	}
}

// stopWait is the user's "Stop, wait." (espeak-ng's en+f3) at 16 kHz and the sample its words
// begin at.
func stopWait(t testing.TB) (user []float32, onset int) {
	t.Helper()
	wav, err := exec.Command("espeak-ng", "-v", "en+f3", "--stdout", "Stop, wait.").Output()
	if err != nil {
		t.Fatalf("espeak-ng: %v", err)
	}
	user = soxTo16k(t, "wav", wav)
	for onset < len(user) && math.Abs(float64(user[onset])) < 0.02 {
		onset++
	}
	return user, onset
}

// heldAlone is heldAfter on the words alone at gain, 1.5 s into silence: the detector's own
// latency, which the corpus's bounds add to.
func heldAlone(t testing.TB, speech turn.Speech, user []float32, onset int, gain float64) int {
	t.Helper()
	alone := make([]float32, 24000+len(user)+16000)
	for j, v := range user {
		alone[24000+j] = v * float32(gain)
	}
	return heldAfter(t, speech, alone, 24000+onset)
}

// heldAfter is how many samples after from server_vad (Hush, OpenAI's defaults) holds the floor
// on pcm (-1: never): held already by residual echo counts, the reply is cut either way.
func heldAfter(t testing.TB, speech turn.Speech, pcm []float32, from int) int {
	t.Helper()
	h, err := turn.NewHush(turn.DefaultHushConfig(speech))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for j := 0; j < len(pcm); j += 320 {
		if _, err := h.Feed(pcm[j:min(j+320, len(pcm))], int64(j)); err != nil {
			t.Fatal(err)
		}
		if h.Floor() == turn.Held && j+320 >= from {
			return j + 320 - from
		}
	}
	return -1
}

func maxOf(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, v)
	}
	return m
}
