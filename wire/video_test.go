package wire

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

var (
	tinyPNG  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tinyJPEG = []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F'}
)

// input_video_buffer.append decodes in both dialects, as base64 or a data URI; its frame is
// refused by name when too large (before base64 is decoded), not base64, or neither PNG nor JPEG.
func TestVideoAppend(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	for name, c := range map[string]struct {
		event string
		max   int
		code  string // "" = taken
		want  []byte
		mime  string
	}{
		"png":            {`{"type":"input_video_buffer.append","event_id":"e1","image":"` + b64(tinyPNG) + `"}`, 100, "", tinyPNG, "image/png"},
		"jpeg data uri":  {`{"type":"input_video_buffer.append","image":"data:image/jpeg;base64,` + b64(tinyJPEG) + `"}`, 100, "", tinyJPEG, "image/jpeg"},
		"too large":      {`{"type":"input_video_buffer.append","image":"` + b64(tinyPNG) + `"}`, 8, CodeVideoFrameTooLarge, nil, ""},
		"just too large": {`{"type":"input_video_buffer.append","image":"` + b64(tinyPNG) + `"}`, len(tinyPNG) - 1, CodeVideoFrameTooLarge, nil, ""},
		"just fits":      {`{"type":"input_video_buffer.append","image":"` + b64(tinyPNG) + `"}`, len(tinyPNG), "", tinyPNG, "image/png"},
		"gif":            {`{"type":"input_video_buffer.append","image":"` + b64([]byte("GIF89a......")) + `"}`, 100, CodeVideoFrameNotImage, nil, ""},
		"not base64":     {`{"type":"input_video_buffer.append","image":"%%%%"}`, 100, CodeVideoFrameNotImage, nil, ""},
		"uri not base64": {`{"type":"input_video_buffer.append","image":"data:image/png,abc"}`, 100, CodeVideoFrameNotImage, nil, ""},
		"missing":        {`{"type":"input_video_buffer.append"}`, 100, CodeMissingRequiredParameter, nil, ""},
	} {
		for _, d := range []Dialect{GA, Beta} {
			ev, err := Decode([]byte(c.event), d)
			var we *Error
			if err != nil {
				if !errors.As(err, &we) || we.Code != c.code {
					t.Errorf("%s: decode %v", name, err)
				}
				continue
			}
			v, ok := ev.(*InputVideoBufferAppend)
			if !ok {
				t.Fatalf("%s: %T", name, ev)
			}
			data, mime, ferr := v.Frame(c.max)
			switch {
			case c.code == "" && ferr != nil:
				t.Errorf("%s: %v", name, ferr)
			case c.code != "" && (ferr == nil || ferr.Code != c.code):
				t.Errorf("%s: %v, want %s", name, ferr, c.code)
			case c.code == "" && (!bytes.Equal(data, c.want) || mime != c.mime):
				t.Errorf("%s: %q %s", name, data, mime)
			}
		}
	}
}

func FuzzVideoAppend(f *testing.F) {
	f.Add([]byte(`{"type":"input_video_buffer.append","image":"`+base64.StdEncoding.EncodeToString(tinyPNG)+`"}`), 64)
	f.Add([]byte(`{"type":"input_video_buffer.append","image":"data:image/jpeg;base64,/9j/"}`), 3)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		ev, err := Decode(data, GA)
		if err != nil {
			return
		}
		if v, ok := ev.(*InputVideoBufferAppend); ok {
			frame, mime, ferr := v.Frame(max)
			if ferr == nil && (len(frame) > max || SniffImage(frame) != mime || mime == "") {
				t.Fatalf("taken: %d bytes over %d, mime %q", len(frame), max, mime)
			}
		}
	})
}
