package npm

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
)

// A publish document is one JSON object whose bulk is the tarball, base64
// in _attachments.<file>.data. ReadDocument walks the document as a
// stream: every other value is metadata, kept in memory and bounded by
// maxMetadata, while the data string is decoded on the fly and handed to
// a Sink. So a publish costs the metadata plus a few buffers whatever the
// tarball's size, and the order of the document's keys does not matter.

// Sink keeps the decoded data of the attachment, reading it to the end.
type Sink func(data io.Reader) (Tarball, error)

// errMetadataTooLarge refuses a document whose metadata is past
// maxMetadata. Each refusal is a new error: a client error is a value its
// handlers may add details to, never one shared between requests.
func errMetadataTooLarge() error {
	return format.Errorf(apierr.PayloadTooLarge, "a package document is limited to %d bytes besides its tarball", maxMetadata)
}

// errOneTarball refuses a second attachment (npm sends a provenance
// bundle as one) as soon as its name is read, before its data.
func errOneTarball() error {
	return format.BadRequest("a publish must carry exactly one version and its tarball (provenance is not supported)")
}

// ReadDocument decodes a PUT body for package name from r, handing the
// attachment's data to sink. On error nothing is kept: a tarball the sink
// made is closed.
func ReadDocument(r io.Reader, name Name, sink Sink) (d *Document, err error) {
	s := &scanner{r: bufio.NewReaderSize(r, 64<<10), budget: maxMetadata}
	d = &Document{}
	defer func() {
		if err != nil {
			_ = d.Close()
			d = nil
		}
	}()
	c, err := s.peekValue()
	if err != nil {
		return nil, err
	}
	if c != '{' {
		return nil, invalidDocument("the document is not a JSON object")
	}
	if err := s.object(func(key string) error { return s.field(d, key, sink) }); err != nil {
		return nil, err
	}
	if c, err := s.peek(); err == nil {
		return nil, invalidDocument("data after the document: %q", c)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	full := name.String()
	if d.Name != "" && d.Name != full || d.ID != "" && d.ID != full {
		return nil, format.BadRequest("document names %q, the URL %q", firstNonEmpty(d.Name, d.ID), full)
	}
	return d, nil
}

// field reads the value of one top-level key into d.
func (s *scanner) field(d *Document, key string, sink Sink) error {
	if key == "_attachments" {
		return s.attachments(d, sink)
	}
	var dst any
	switch key {
	case "_id":
		dst = &d.ID
	case "name":
		dst = &d.Name
	case "description":
		dst = &d.Description
	case "readme":
		dst = &d.Readme
	case "dist-tags":
		dst = &d.DistTags
	case "versions":
		dst = &d.Versions
	}
	return s.decode(dst)
}

// attachments reads _attachments: null, or an object of at most one file.
func (s *scanner) attachments(d *Document, sink Sink) error {
	c, err := s.peekValue()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.decode(&d.Attachments) // null, or refused as encoding/json would
	}
	return s.object(func(file string) error {
		if len(d.Attachments) > 0 {
			return errOneTarball()
		}
		if d.Attachments == nil {
			d.Attachments = map[string]Attachment{}
		}
		var a Attachment
		c, err := s.peekValue()
		if err != nil {
			return err
		}
		if c == '{' {
			err = s.object(func(key string) error {
				switch key {
				case "data":
					return s.data(d, sink)
				case "content_type":
					return s.decode(&a.ContentType)
				case "length":
					return s.decode(&a.Length)
				}
				return s.decode(nil)
			})
		} else {
			err = s.decode(&a)
		}
		d.Attachments[file] = a
		return err
	})
}

// data streams the attachment's base64 string into sink.
func (s *scanner) data(d *Document, sink Sink) error {
	c, err := s.peekValue()
	if err != nil {
		return err
	}
	if c != '"' {
		var null []byte
		return s.decode(&null) // null is no data; anything else is refused
	}
	if d.Tarball != nil {
		return errOneTarball()
	}
	_, _ = s.r.ReadByte() // the opening quote, peeked
	sr := &stringReader{s: s}
	dec := &errReader{r: base64.NewDecoder(base64.StdEncoding, sr)}
	t, err := sink(dec)
	switch {
	case sr.err != nil:
		err = sr.err // the body failed, or the string was not JSON
	case dec.err != nil:
		err = invalidDocument("%v", dec.err) // not base64
	case err == nil && !sr.done:
		err = invalidDocument("the attachment data was not read to its end")
	}
	if err != nil {
		if t != nil {
			_ = t.Close()
		}
		return err
	}
	d.Tarball = t
	return nil
}

// scanner reads JSON from a buffered body, counting every byte it keeps
// against the metadata budget.
type scanner struct {
	r      *bufio.Reader
	budget int64
}

// next consumes one byte of metadata.
func (s *scanner) next() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, s.readError(err)
	}
	if s.budget--; s.budget < 0 {
		return 0, errMetadataTooLarge()
	}
	return c, nil
}

// peek skips whitespace and returns the next byte without consuming it;
// io.EOF at the end of the body.
func (s *scanner) peek() (byte, error) {
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, s.readError(err)
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			if _, err := s.next(); err != nil {
				return 0, err
			}
		default:
			return b[0], nil
		}
	}
}

// readError is the error of a body that ended or failed mid-document;
// the body's own errors (413, 400) pass through.
func (s *scanner) readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalidDocument("unexpected end of JSON input")
	}
	return err
}

// expect consumes the next non-space byte, which must be c.
func (s *scanner) expect(c byte) error {
	if _, err := s.peekValue(); err != nil {
		return err
	}
	got, err := s.next()
	if err != nil {
		return err
	}
	if got != c {
		return invalidDocument("invalid character %q, expected %q", got, c)
	}
	return nil
}

// peekValue is peek where the end of the body is an error.
func (s *scanner) peekValue() (byte, error) {
	c, err := s.peek()
	if errors.Is(err, io.EOF) {
		return 0, s.readError(err)
	}
	return c, err
}

// object reads a JSON object, calling fn after each key to read its
// value.
func (s *scanner) object(fn func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	c, err := s.peekValue()
	if err != nil {
		return err
	}
	if c == '}' {
		_, err := s.next()
		return err
	}
	for {
		var key string
		if err := s.decode(&key); err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		c, err := s.peekValue()
		if err != nil {
			return err
		}
		if _, err := s.next(); err != nil {
			return err
		}
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return invalidDocument("invalid character %q after object value", c)
		}
	}
}

// decode reads one JSON value and decodes it into dst (nil: checked and
// dropped).
func (s *scanner) decode(dst any) error {
	raw, err := s.value()
	if err != nil {
		return err
	}
	if dst == nil {
		dst = new(json.RawMessage) // still checked: the document must be JSON
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidDocument("%s", jsonMessage(err))
	}
	return nil
}

// value reads the bytes of one JSON value; encoding/json checks them.
func (s *scanner) value() ([]byte, error) {
	if _, err := s.peekValue(); err != nil {
		return nil, err
	}
	var buf []byte
	depth := 0
	for {
		c, err := s.next()
		if err != nil {
			return nil, err
		}
		buf = append(buf, c)
		switch c {
		case '"':
			if buf, err = s.stringTail(buf); err != nil {
				return nil, err
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		default:
			if depth == 0 {
				// A number or literal runs to the next delimiter.
				return s.literalTail(buf)
			}
		}
		if depth <= 0 {
			return buf, nil
		}
	}
}

// stringTail appends a string's bytes up to its closing quote, a
// buffered run at a time (a readme can be megabytes).
func (s *scanner) stringTail(buf []byte) ([]byte, error) {
	for {
		b, err := s.r.Peek(1)
		if len(b) == 0 {
			return nil, s.readError(err)
		}
		b, _ = s.r.Peek(s.r.Buffered())
		i := bytes.IndexAny(b, `"\`)
		if i >= 0 {
			b = b[:i+1]
		}
		if s.budget -= int64(len(b)); s.budget < 0 {
			return nil, errMetadataTooLarge()
		}
		buf = append(buf, b...)
		_, _ = s.r.Discard(len(b))
		switch {
		case i < 0:
		case buf[len(buf)-1] == '"':
			return buf, nil
		default: // a backslash: the next byte is escaped
			c, err := s.next()
			if err != nil {
				return nil, err
			}
			buf = append(buf, c)
		}
	}
}

// literalTail appends the rest of a number, true, false or null.
func (s *scanner) literalTail(buf []byte) ([]byte, error) {
	for {
		b, err := s.r.Peek(1)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(b) == 0 {
			return buf, nil
		}
		switch b[0] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return buf, nil
		}
		c, err := s.next()
		if err != nil {
			return nil, err
		}
		buf = append(buf, c)
	}
}

// stringReader reads the contents of a JSON string (its opening quote
// consumed) up to the closing quote, unescaped. It feeds the base64
// decoder, so its bytes are not metadata.
type stringReader struct {
	s    *scanner
	done bool
	err  error // the first failure, kept so it is reported as it is
}

func (sr *stringReader) Read(p []byte) (int, error) {
	if sr.done {
		return 0, io.EOF
	}
	if sr.err != nil {
		return 0, sr.err
	}
	n, err := sr.read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		sr.err = err
	}
	return n, err
}

func (sr *stringReader) read(p []byte) (int, error) {
	r := sr.s.r
	if len(p) == 0 {
		return 0, nil
	}
	b, err := r.Peek(1)
	if len(b) == 0 {
		return 0, sr.s.readError(err)
	}
	b, _ = r.Peek(min(r.Buffered(), len(p)))
	n := 0
	for n < len(b) && b[n] != '"' && b[n] != '\\' && b[n] >= 0x20 {
		n++
	}
	if n > 0 {
		copy(p, b[:n])
		_, _ = r.Discard(n)
		return n, nil
	}
	c, _ := r.ReadByte()
	switch {
	case c == '"':
		sr.done = true
		return 0, io.EOF
	case c < 0x20:
		return 0, invalidDocument("invalid character %q in string literal", c)
	}
	// An escape: base64 is ASCII, so only escapes of ASCII make sense
	// ("\/" is the one JSON encoders write).
	e, err := r.ReadByte()
	if err != nil {
		return 0, sr.s.readError(err)
	}
	switch e {
	case '"', '\\', '/':
		p[0] = e
	case 'n':
		p[0] = '\n' // skipped by the base64 decoder, as encoding/json did
	case 'r':
		p[0] = '\r'
	case 'u':
		var hex [4]byte
		if _, err := io.ReadFull(r, hex[:]); err != nil {
			return 0, sr.s.readError(err)
		}
		v, err := strconv.ParseUint(string(hex[:]), 16, 16)
		if err != nil {
			return 0, invalidDocument("invalid escape in string literal")
		}
		if v >= 0x80 {
			return 0, invalidDocument("illegal base64 data in the attachment")
		}
		p[0] = byte(v)
	default:
		return 0, invalidDocument("illegal base64 data in the attachment")
	}
	return 1, nil
}

// errReader remembers the first error of r other than io.EOF, so that a
// failure of the source can be told from one of its consumer.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}

// invalidDocument is a 400 for a body that is not a publish document.
func invalidDocument(msg string, args ...any) error {
	return format.BadRequest("invalid package document: "+msg, args...)
}
