package audio

import "math"

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
