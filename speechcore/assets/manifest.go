package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ManifestName is the manifest's file name in the mount root.
const ManifestName = "MODELS.sha256"

// Layout paths, relative to the mount root.
const (
	WhisperDir  = "models/whisper-small"
	KokoroDir   = "models/kokoro-82m"
	VoicesDir   = KokoroDir + "/voices"
	LexiconDir  = KokoroDir + "/lexicon"
	SileroModel = "models/silero-vad/silero_vad.onnx"
)

// HashFile returns the hex sha256 of the file at path.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteManifest hashes every regular file under dir/models and writes dir/MODELS.sha256 in GNU
// sha256sum format (paths relative to dir, sorted) with exactly one "# version:" line.
func WriteManifest(dir, version string) error {
	if strings.ContainsAny(version, "\r\n") || strings.TrimSpace(version) == "" {
		return fmt.Errorf("write manifest: version %q must be one non-empty line", version)
	}
	var paths []string
	err := filepath.WalkDir(filepath.Join(dir, "models"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	sort.Strings(paths)
	var b strings.Builder
	fmt.Fprintf(&b, "# voiced speech assets\n# version: %s\n", version)
	for _, rel := range paths {
		sum, err := HashFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("write manifest: %w", err)
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, rel)
	}
	return os.WriteFile(filepath.Join(dir, ManifestName), []byte(b.String()), 0o644)
}
