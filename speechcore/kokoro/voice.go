package kokoro

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Voice tables are raw little-endian float32 [StyleRows x StyleDim] (onnx-community voices/*.bin).
const (
	StyleDim  = 256
	StyleRows = MaxPhonemes // one style vector per phoneme count 1..510
	// MaxStyleRow is the last row: StyleRow never goes past it.
	MaxStyleRow = StyleRows - 1
	voiceBytes  = StyleRows * StyleDim * 4
)

// StyleRow is the row of a voice table used for a call of n phoneme ids (pads excluded):
// clamp(n-1, 0, 509), the PyTorch reference's pack[len(ps)-1] and the newest kokoro-onnx's
// convention. kokoro.js, sherpa-onnx and older kokoro-onnx use row n, one off (docs/models.md §2.3).
func StyleRow(n int) int { return min(max(n-1, 0), MaxStyleRow) }

// Voice is one style table.
type Voice struct {
	Name  string
	table []float32 // StyleRows * StyleDim
}

// Style returns the style vector for a call of n phoneme ids.
func (v *Voice) Style(n int) []float32 {
	row := StyleRow(n)
	return v.table[row*StyleDim : (row+1)*StyleDim]
}

// LoadVoice reads one voices/<name>.bin.
func LoadVoice(path string) (*Voice, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read voice: %w", err)
	}
	if len(b) != voiceBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, a float32 [%d x %d] table is %d", ErrVoiceTable, path, len(b), StyleRows, StyleDim, voiceBytes)
	}
	t := make([]float32, len(b)/4)
	for i := range t {
		t[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
	}
	return &Voice{Name: strings.TrimSuffix(filepath.Base(path), ".bin"), table: t}, nil
}

// loadVoices reads every dir/*.bin (the mount already refused files without a manifest line).
func loadVoices(dir string) (map[string]*Voice, []string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.bin"))
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("%w: no voices/*.bin in %s", ErrVoiceTable, dir)
	}
	voices := map[string]*Voice{}
	var names []string
	for _, p := range paths {
		v, err := LoadVoice(p)
		if err != nil {
			return nil, nil, err
		}
		voices[v.Name] = v
		names = append(names, v.Name)
	}
	sort.Strings(names)
	return voices, names, nil
}

// MatchVoice maps a voice name a client asked for to a mounted voice: the name itself, else
// Kokoro's voice of the same name ("alloy" → af_alloy, "echo" → am_echo), else "" (the engine's
// default). OpenAI's voice names thus reach the nearest Kokoro voice.
func MatchVoice(mounted []string, name string) string {
	for _, v := range []string{name, "af_" + name, "am_" + name, "bf_" + name, "bm_" + name} {
		if slices.Contains(mounted, v) {
			return v
		}
	}
	return ""
}
