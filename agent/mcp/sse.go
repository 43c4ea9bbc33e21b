package mcp

import (
	"bufio"
	"bytes"
	"io"
)

// sseEvent is one event of a text/event-stream: its type ("" for
// message), its id field and its data.
type sseEvent struct {
	name, id, data string
}

// sseReader parses a text/event-stream as the HTML standard says: lines
// end in CRLF, LF or CR; "data" lines join with "\n"; an empty line ends
// an event, one with no data is not passed on; comments and unknown
// fields are ignored; an event cut short by the end of the stream is
// dropped. No line and no event may pass limit bytes.
type sseReader struct {
	r       *bufio.Reader
	limit   int
	skipLF  bool // the last line ended in CR: a LF right after it belongs to it
	started bool
	line    []byte
}

func newSSEReader(r io.Reader, limit int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 16<<10), limit: limit}
}

// next returns the next event with data, or the error that ended the
// stream (io.EOF at its end).
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []byte
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.data = string(data)
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > s.limit {
				return sseEvent{}, errTooLarge
			}
			data = append(data, value...)
			hasData = true
		case "event":
			ev.name = string(value)
		case "id":
			if !bytes.ContainsRune(value, 0) {
				ev.id = string(value)
			}
		}
	}
}

// readLine returns one line without its end, valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if s.skipLF {
			s.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return s.strip(), nil
		case '\r':
			s.skipLF = true
			return s.strip(), nil
		}
		if len(s.line) >= s.limit {
			return nil, errTooLarge
		}
		s.line = append(s.line, b)
	}
}

// strip drops the byte order mark that may open the stream.
func (s *sseReader) strip() []byte {
	line := s.line
	if !s.started {
		s.started = true
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	return line
}
