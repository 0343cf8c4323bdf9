package assets

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func runSha256sum(dir string) ([]byte, error) {
	cmd := exec.Command("sha256sum", "--quiet", "-c", ManifestName)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// BenchmarkVerifyMount verifies a mount of about 1 GB of random (not sparse) data shaped like the
// real artifact, and reports MB/s beside `sha256sum -c` on the same files (page cache warm for
// both). VOICED_BENCH_MOUNT_MB changes the size.
func BenchmarkVerifyMount(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 1 GB mount")
	}
	total := 1024
	if s := os.Getenv("VOICED_BENCH_MOUNT_MB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 16 {
			b.Fatalf("VOICED_BENCH_MOUNT_MB=%q: want a number >= 16", s)
		}
		total = n
	}
	dir := b.TempDir()
	// Proportions of the real artifact: Whisper-small encoder + merged decoder dominate.
	shares := map[string]float64{
		WhisperDir + "/encoder_model.onnx":        0.28,
		WhisperDir + "/decoder_model_merged.onnx": 0.52,
		KokoroDir + "/model.onnx":                 0.18,
	}
	rng := rand.NewChaCha8([32]byte{1})
	var size int64
	for _, rel := range RequiredFiles {
		n := int64(4096)
		if s, ok := shares[rel]; ok {
			n = int64(s * float64(total) * (1 << 20))
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for left := n; left > 0; left -= int64(len(buf)) {
			rng.Read(buf)
			if left < int64(len(buf)) {
				buf = buf[:left]
			}
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		size += n
	}
	if err := WriteManifest(dir, "bench"); err != nil { // also warms the page cache
		b.Fatal(err)
	}
	// sha256sum is timed three times and the best kept: the machine may be shared.
	var sumTime time.Duration
	if _, err := exec.LookPath("sha256sum"); err == nil {
		for range 3 {
			start := time.Now()
			if out, err := runSha256sum(dir); err != nil {
				b.Fatalf("sha256sum -c: %v\n%s", err, out)
			}
			if d := time.Since(start); sumTime == 0 || d < sumTime {
				sumTime = d
			}
		}
	}
	mb := float64(size) / 1e6
	for _, workers := range []int{1, maxHashWorkers} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			defer func(w int) { maxHashWorkers = w }(maxHashWorkers)
			maxHashWorkers = workers
			b.SetBytes(size)
			for b.Loop() {
				if _, err := Open(dir); err != nil {
					b.Fatal(err)
				}
			}
			perOp := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(mb/perOp.Seconds(), "MB/s")
			if sumTime > 0 {
				b.ReportMetric(mb/sumTime.Seconds(), "sha256sum-MB/s")
				b.ReportMetric(sumTime.Seconds()/perOp.Seconds(), "x-sha256sum")
			}
		})
	}
}
