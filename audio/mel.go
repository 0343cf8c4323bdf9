package audio

import (
	"math"
	"runtime"
	"sync"
)

// Whisper's front-end constants (docs/models.md §1.1).
const (
	WhisperSampleRate = 16000
	WhisperNFFT       = 400
	WhisperHop        = 160
	WhisperSamples    = 480000 // 30 s
	WhisperFrames     = 3000
)

// slaneyHzToMel and slaneyMelToHz are librosa's htk=False scale: linear below 1 kHz, log above.
func slaneyHzToMel(f float64) float64 {
	const fSp = 200.0 / 3
	if f < 1000 {
		return f / fSp
	}
	return 1000/fSp + math.Log(f/1000)/(math.Log(6.4)/27)
}

func slaneyMelToHz(m float64) float64 {
	const fSp = 200.0 / 3
	if m < 1000/fSp {
		return fSp * m
	}
	return 1000 * math.Exp((math.Log(6.4)/27)*(m-1000/fSp))
}

// MelBandEdges returns the nMels+2 Slaney band edges in Hz from 0 to sampleRate/2. Filter m rises
// from edge m, peaks at edge m+1 and falls to edge m+2.
func MelBandEdges(nMels, sampleRate int) []float64 {
	lo, hi := slaneyHzToMel(0), slaneyHzToMel(float64(sampleRate)/2)
	f := make([]float64, nMels+2)
	for i := range f {
		f[i] = slaneyMelToHz(lo + (hi-lo)*float64(i)/float64(nMels+1))
	}
	return f
}

// MelFilters computes the Slaney-normalised mel filterbank [nMels][nFFT/2+1] exactly as librosa
// (htk=False, norm="slaney") and openai/whisper's mel_filters.npz: float64 arithmetic, float32
// result, row-major.
func MelFilters(nMels, nFFT, sampleRate int) [][]float32 {
	bins := nFFT/2 + 1
	f := MelBandEdges(nMels, sampleRate)
	W := make([][]float32, nMels)
	for m := 0; m < nMels; m++ {
		W[m] = make([]float32, bins)
		norm := 2 / (f[m+2] - f[m])
		for k := 0; k < bins; k++ {
			freq := float64(k) * float64(sampleRate) / float64(nFFT)
			lower := (freq - f[m]) / (f[m+1] - f[m])
			upper := (f[m+2] - freq) / (f[m+2] - f[m+1])
			w := math.Max(0, math.Min(lower, upper))
			W[m][k] = float32(w * norm)
		}
	}
	return W
}

// melBank is MelFilters in sparse form: filter m is non-zero only on bins first[m] to
// first[m]+len(weights[m])-1.
type melBank struct {
	first   []int
	weights [][]float64
}

var melBanks sync.Map // nMels → *melBank

func melBankFor(nMels int) *melBank {
	if b, ok := melBanks.Load(nMels); ok {
		return b.(*melBank)
	}
	dense := MelFilters(nMels, WhisperNFFT, WhisperSampleRate)
	b := &melBank{first: make([]int, nMels), weights: make([][]float64, nMels)}
	for m, row := range dense {
		lo, hi := len(row), -1
		for k, w := range row {
			if w != 0 {
				lo, hi = min(lo, k), max(hi, k)
			}
		}
		b.first[m] = lo
		for k := lo; k <= hi; k++ {
			b.weights[m] = append(b.weights[m], float64(row[k]))
		}
	}
	actual, _ := melBanks.LoadOrStore(nMels, b)
	return actual.(*melBank)
}

// hannPeriodic is torch.hann_window(400) (periodic=True): 0.5 - 0.5·cos(2πn/400).
var hannPeriodic = func() (w [WhisperNFFT]float64) {
	for n := range w {
		w[n] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(n)/WhisperNFFT)
	}
	return w
}()

const (
	melBins   = WhisperNFFT/2 + 1         // 201
	melPad    = WhisperNFFT / 2           // reflect padding each side
	melPadded = WhisperSamples + 2*melPad // 480400
	melLogMin = 1e-10                     // floor before log10
	melRange  = 8.0                       // dynamic range kept below the maximum, in log10 units
)

// melPadLog is every band's log10 mel on a frame of zeros: log10(max(0, 1e-10)).
var melPadLog = math.Log10(melLogMin)

// Mel computes Whisper log-mel features, reusing its buffers between calls. Frames are split
// across up to GOMAXPROCS workers (at most melMaxWorkers), each with its own FFT and scratch;
// Compute waits for them all. A Mel is not safe for concurrent use; LogMel keeps a pool of them.
type Mel struct {
	nMels   int
	bank    *melBank
	padded  []float32 // melPadded samples (the audio is float32: nothing is lost)
	spec    []float64 // log10 mel, frame-major: [WhisperFrames][nMels]
	workers []*melWorker
}

const melMaxWorkers = 8

// melWorker owns the scratch for one range of frames.
type melWorker struct {
	fft   fftScratch
	frame []float64 // one windowed frame
	power []float64 // |DFT|², melBins
	max   float64   // largest log10 mel of its frames
}

func newMelWorker() *melWorker {
	return &melWorker{
		frame: make([]float64, WhisperNFFT),
		power: make([]float64, melBins),
	}
}

// NewMel returns a front end for nMels bands (80 for whisper-small, 128 for large-v3).
func NewMel(nMels int) *Mel {
	m := &Mel{
		nMels:  nMels,
		bank:   melBankFor(nMels),
		padded: make([]float32, melPadded),
		spec:   make([]float64, WhisperFrames*nMels),
	}
	for range min(max(runtime.GOMAXPROCS(0), 1), melMaxWorkers) {
		m.workers = append(m.workers, newMelWorker())
	}
	return m
}

// Compute writes the features of pcm16k into dst (grown if short) and returns it:
// [nMels*WhisperFrames] float32, mel-major, exactly docs/models.md §1.1 — pad or cut to 30 s,
// reflect-pad 200 each side, periodic Hann 400, |DFT 400|², 3000 frames (the 3001st dropped),
// Slaney filters, log10(max(x, 1e-10)), max(x, global max − 8), (x + 4) / 4.
func (m *Mel) Compute(dst, pcm16k []float32) []float32 {
	n := m.nMels * WhisperFrames
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]

	x := m.padded[melPad : melPad+WhisperSamples]
	in := pcm16k[:min(len(pcm16k), WhisperSamples)]
	copy(x, in)
	clear(x[len(in):])
	reflectPad(m.padded, melPad)

	per := (WhisperFrames + len(m.workers) - 1) / len(m.workers)
	var wg sync.WaitGroup
	for i, w := range m.workers[1:] {
		wg.Go(func() { m.frames(w, (i+1)*per, min((i+2)*per, WhisperFrames)) })
	}
	m.frames(m.workers[0], 0, min(per, WhisperFrames))
	wg.Wait()

	globalMax := math.Inf(-1)
	for _, w := range m.workers {
		globalMax = max(globalMax, w.max)
	}
	clampScale(dst, m.spec, m.nMels, WhisperFrames, globalMax)
	return dst
}

// frames computes log10 mel energies for frames [from, to) into m.spec (frame t at
// spec[t·nMels:]), reading m.padded[t·160 : t·160+400].
func (m *Mel) frames(w *melWorker, from, to int) {
	w.max = math.Inf(-1)
	for t := from; t < to; t++ {
		w.powerSpectrum(m.padded[t*WhisperHop : t*WhisperHop+WhisperNFFT])
		for mel := 0; mel < m.nMels; mel++ {
			p := w.power[m.bank.first[mel]:]
			var sum float64
			for k, weight := range m.bank.weights[mel] {
				sum += weight * p[k]
			}
			v := math.Log10(max(sum, melLogMin))
			m.spec[t*m.nMels+mel] = v
			w.max = max(w.max, v)
		}
	}
}

// reflectPad fills the pad samples either side of buf[pad:len(buf)-pad] by reflection without
// repeating the edge sample (numpy/torch "reflect").
func reflectPad(buf []float32, pad int) {
	n := len(buf) - 2*pad
	for i := 1; i <= pad; i++ {
		buf[pad-i] = buf[pad+i]
		buf[pad+n-1+i] = buf[pad+n-1-i]
	}
}

// powerSpectrum sets w.power to |DFT(frame·window)|² over melBins bins.
func (w *melWorker) powerSpectrum(frame []float32) {
	for i, v := range frame[:WhisperNFFT] {
		w.frame[i] = float64(v) * hannPeriodic[i]
	}
	w.fft.power400(w.frame, w.power)
}

// clampScale is the last step: max(x, globalMax-8), then (x+4)/4, written mel-major into dst
// ([nMels][WhisperFrames]) from the frame-major spec. Frames at and past computed are all
// padding: each band there is log10(1e-10), and is written as that without being stored.
func clampScale(dst []float32, spec []float64, nMels, computed int, globalMax float64) {
	floor := globalMax - melRange
	for t := range computed {
		row := spec[t*nMels : (t+1)*nMels]
		for mel, v := range row {
			dst[mel*WhisperFrames+t] = float32((max(v, floor) + 4) / 4)
		}
	}
	if computed < WhisperFrames {
		pad := float32((max(melPadLog, floor) + 4) / 4)
		for mel := range nMels {
			tail := dst[mel*WhisperFrames+computed : (mel+1)*WhisperFrames]
			for i := range tail {
				tail[i] = pad
			}
		}
	}
}

var melPools sync.Map // nMels → *sync.Pool of *Mel

// LogMel returns Whisper's log-mel features for one 30 s window of 16 kHz mono audio (longer
// input is cut, shorter is padded with silence): [nMels*3000] float32, mel-major, ready to feed
// as [1, nMels, 3000]. Safe for concurrent use.
func LogMel(pcm16k []float32, nMels int) []float32 {
	p, _ := melPools.LoadOrStore(nMels, &sync.Pool{New: func() any { return NewMel(nMels) }})
	pool := p.(*sync.Pool)
	m := pool.Get().(*Mel)
	defer pool.Put(m)
	return m.Compute(nil, pcm16k)
}
