package mind

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// maxSSELine bounds one line of the stream; a chunk-completions chunk is far smaller.
const maxSSELine = 1 << 20

var errSSELineTooLong = errors.New("mind: server-sent event line over 1 MiB")

// sseReader reads server-sent events (text/event-stream) and returns each event's data.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 16<<10)} }

// Next returns the data of the next event that has any (multi-line data joined by "\n"); io.EOF
// when the stream ends with no further data.
func (s *sseReader) Next() (string, error) {
	var data []string
	have := false
	for {
		line, err := s.line()
		if err != nil {
			if errors.Is(err, io.EOF) && have {
				return strings.Join(data, "\n"), nil
			}
			return "", err
		}
		if line == "" {
			if have {
				return strings.Join(data, "\n"), nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comment / keep-alive
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if field == "data" {
			data = append(data, value)
			have = true
		}
	}
}

func (s *sseReader) line() (string, error) {
	var b []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxSSELine {
			return "", errSSELineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(b) > 0 {
				return strings.TrimRight(string(b), "\r\n"), nil
			}
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
}
