package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/audio"
)

// Bounds of one ffmpeg process: one thread, at most ffmpegMemory bytes of address space and
// the CPU seconds its job may take (prlimit, util-linux), killed at its wall-clock bound.
const (
	ffmpegMemory       = 1 << 30
	ffmpegDecodeCPU    = 120 // seconds of CPU to decode one upload (an hour of AAC is ~10 s)
	ffmpegDecodeWall   = 3 * time.Minute
	ffmpegEncodeCPU    = 600
	ffmpegDecodeRate   = 16000 // what the decoder is asked for: Whisper's rate, so no resampling here
	ffmpegOutputBuffer = 32 << 10
)

var findFFmpeg = sync.OnceValues(func() ([]string, error) {
	ff, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, ErrNoFFmpeg
	}
	if pl, err := exec.LookPath("prlimit"); err == nil {
		return []string{pl, "--as=" + strconv.Itoa(ffmpegMemory), "--cpu=%CPU%", "--", ff}, nil
	}
	return []string{ff}, nil
})

// HaveFFmpeg reports whether the formats that need ffmpeg (AAC out; MP4/M4A, WebM, Ogg Vorbis
// and ADTS in) can be served.
func HaveFFmpeg() bool { _, err := findFFmpeg(); return err == nil }

func ffmpegCommand(ctx context.Context, cpu int, args ...string) (*exec.Cmd, error) {
	base, err := findFFmpeg()
	if err != nil {
		return nil, err
	}
	argv := make([]string, 0, len(base)+len(args)+6)
	for _, a := range base {
		argv = append(argv, strings.ReplaceAll(a, "%CPU%", strconv.Itoa(cpu)))
	}
	argv = append(argv, "-nostdin", "-hide_banner", "-loglevel", "warning", "-threads", "1")
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// stderrTail keeps the last bytes ffmpeg wrote to stderr, for the error it explains, and notes
// the warnings that say the input was cut short (ffmpeg decodes what there is and exits 0).
type stderrTail struct {
	mu        sync.Mutex
	buf       []byte
	truncated string
	hide      string // the input's path: not shown to a client
}

// truncationWarnings are ffmpeg's words for an input cut short, which -xerror does not make
// fatal (the Matroska demuxer's "File ended prematurely", the MP4 demuxer's stream read errors).
var truncationWarnings = []string{"ended prematurely", "truncat", "Packet corrupt", "Invalid data found", "stream 0, offset", "error reading header"}

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	if s.hide != "" {
		p = bytes.ReplaceAll(p, []byte(s.hide), []byte("the upload"))
	}
	if s.truncated == "" {
		for _, w := range truncationWarnings {
			if bytes.Contains(p, []byte(w)) {
				s.truncated = strings.TrimSpace(string(p))
				break
			}
		}
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) > 2048 {
		s.buf = s.buf[len(s.buf)-2048:]
	}
	return n, nil
}

func (s *stderrTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(string(s.buf))
}

// aacEncoder pipes PCM16 into `ffmpeg -c:a aac -f adts` and copies its output to the writer from
// one goroutine (the only writer of the body while the encoder lives; Close and Abort wait for
// it). ffmpeg flushes each packet (-flush_packets 1), so bytes follow the audio by ffmpeg's
// encoder delay, not by its 32 KiB output buffer.
type aacEncoder struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.WriteCloser
	done   chan struct{}
	stderr *stderrTail
	begun  chan struct{} // closed by the first Write: the copier writes nothing before it
	begin  sync.Once

	mu     sync.Mutex
	outErr error // the copier's write error
	closed bool
}

func newAAC(rate int, out io.Writer) (*aacEncoder, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := ffmpegCommand(ctx, ffmpegEncodeCPU,
		// No probing: ffmpeg would otherwise read analyzeduration (5 s) of audio before encoding any.
		"-probesize", "32", "-analyzeduration", "0",
		"-f", "s16le", "-ar", strconv.Itoa(rate), "-ac", "1", "-i", "pipe:0",
		"-c:a", "aac", "-b:a", "64k", "-f", "adts", "-flush_packets", "1", "pipe:1")
	if err != nil {
		cancel()
		return nil, err
	}
	e := &aacEncoder{cmd: cmd, cancel: cancel, done: make(chan struct{}), stderr: &stderrTail{}, begun: make(chan struct{})}
	cmd.Stderr = e.stderr
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("codec: start ffmpeg: %w", err)
	}
	go e.copy(stdout, out)
	return e, nil
}

func (e *aacEncoder) copy(stdout io.Reader, out io.Writer) {
	defer close(e.done)
	buf := make([]byte, ffmpegOutputBuffer)
	for {
		n, err := stdout.Read(buf)
		if n > 0 {
			<-e.begun // what the caller did before its first Write (headers) happens before this write
			if _, werr := out.Write(buf[:n]); werr != nil {
				e.mu.Lock()
				e.outErr = werr
				e.mu.Unlock()
				e.cancel() // ffmpeg dies, so a Write blocked on its stdin returns
				io.Copy(io.Discard, stdout)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (e *aacEncoder) failure(err error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.outErr != nil {
		return e.outErr
	}
	if msg := e.stderr.String(); msg != "" {
		return fmt.Errorf("codec: ffmpeg aac: %w: %s", err, msg)
	}
	return fmt.Errorf("codec: ffmpeg aac: %w", err)
}

func (e *aacEncoder) Write(pcm []int16) error {
	e.mu.Lock()
	closed, outErr := e.closed, e.outErr
	e.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if outErr != nil {
		return outErr
	}
	e.begin.Do(func() { close(e.begun) })
	if len(pcm) == 0 {
		return nil
	}
	if _, err := e.stdin.Write(audio.Int16ToBytes(pcm)); err != nil {
		return e.failure(err)
	}
	return nil
}

func (e *aacEncoder) finish() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.begin.Do(func() { close(e.begun) }) // an encoder closed unused: ffmpeg may still write a header
	e.stdin.Close()
	<-e.done
	err := e.cmd.Wait()
	e.cancel()
	return err
}

func (e *aacEncoder) Close() error {
	if err := e.finish(); err != nil {
		return e.failure(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.outErr
}

func (e *aacEncoder) Abort() {
	e.cancel()
	e.finish()
}

// ffmpegStream decodes a file ffmpeg reads (MP4/M4A, WebM, Ogg Vorbis, ADTS) to PCM16 mono at
// 16 kHz on its stdout, read a block at a time. An upload held in memory is written to a
// temporary file first (MP4 needs to seek: its index may be at the end).
type ffmpegStream struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdout io.ReadCloser
	stderr *stderrTail
	temp   string
	buf    []byte
	ended  bool
}

// adtsPriming is the AAC-LC priming dropped from an ADTS stream, which cannot state its own (MP4
// does, in its edit list, and ffmpeg applies it): one frame, 1024 samples at the stream's rate,
// the MDCT's overlap that every AAC-LC encoder puts first. It is FFmpeg's own encoder's whole
// priming; Apple's encoder primes 2112, so its ADTS still reads 1088 samples (23 ms at 48 kHz)
// late, where it was 44 ms.
const adtsPriming = 1024

func openFFmpeg(ra io.ReaderAt, size int64, maxSeconds int, kind string) (Stream, error) {
	if !HaveFFmpeg() {
		return nil, ErrNoFFmpeg
	}
	s := &ffmpegStream{stderr: &stderrTail{}}
	path := ""
	if f, ok := ra.(*os.File); ok {
		path = f.Name()
	} else {
		f, err := os.CreateTemp("", "voiced-decode-*")
		if err != nil {
			return nil, fmt.Errorf("codec: spool for ffmpeg: %w", err)
		}
		s.temp = f.Name()
		_, err = io.Copy(f, io.NewSectionReader(ra, 0, size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(s.temp)
			return nil, fmt.Errorf("codec: spool for ffmpeg: %w", err)
		}
		path = s.temp
	}
	ctx, cancel := context.WithTimeout(context.Background(), ffmpegDecodeWall)
	s.cancel = cancel
	// -xerror: a decoding error (a truncated FLAC's last frame) fails the run instead of being
	// skipped. -t: ask for one second past the bound, so the caller sees the file is over it.
	args := []string{"-xerror", "-i", "file:" + path, "-map", "0:a:0", "-vn", "-sn", "-dn"}
	if kind == KindADTS {
		// atrim counts samples at the decoder's rate: the resampling to 16 kHz comes after it.
		args = append(args, "-af", "atrim=start_sample="+strconv.Itoa(adtsPriming))
	}
	args = append(args, "-t", strconv.Itoa(maxSeconds+1), "-ac", "1", "-ar", strconv.Itoa(ffmpegDecodeRate), "-f", "s16le", "pipe:1")
	cmd, err := ffmpegCommand(ctx, ffmpegDecodeCPU, args...)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.cmd = cmd
	s.stderr.hide = "file:" + path
	cmd.Stderr = s.stderr
	if s.stdout, err = cmd.StdoutPipe(); err != nil {
		s.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		s.cmd = nil
		s.Close()
		return nil, fmt.Errorf("codec: start ffmpeg: %w", err)
	}
	return s, nil
}

func (s *ffmpegStream) Rate() int { return ffmpegDecodeRate }

func (s *ffmpegStream) Next(max int) ([]float32, error) {
	if s.ended {
		return nil, io.EOF
	}
	if cap(s.buf) < 2*max {
		s.buf = make([]byte, 2*max)
	}
	n, err := io.ReadFull(s.stdout, s.buf[:2*max])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, broken("ffmpeg", err)
	}
	if err != nil { // the end of ffmpeg's output: did it finish cleanly?
		s.ended = true
		if werr := s.cmd.Wait(); werr != nil {
			msg := s.stderr.String()
			if msg == "" {
				msg = werr.Error()
			}
			return nil, broken("ffmpeg", errors.New(msg))
		}
		s.stderr.mu.Lock()
		cut := s.stderr.truncated
		s.stderr.mu.Unlock()
		if cut != "" {
			return nil, broken("ffmpeg", errors.New(cut))
		}
	}
	if n/2 == 0 {
		return nil, io.EOF
	}
	out := make([]float32, n/2)
	for i := range out {
		out[i] = float32(int16(le16.Uint16(s.buf[2*i:]))) / 32768
	}
	return out, nil
}

func (s *ffmpegStream) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	if s.cmd != nil && !s.ended {
		s.ended = true
		s.cmd.Wait()
	}
	if s.temp != "" {
		os.Remove(s.temp)
	}
	return nil
}
