package format

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Reading archives. Every format reads what it needs of an uploaded
// archive (a gem's metadata.gz, a chart's Chart.yaml, a wheel's METADATA,
// a conda package's info/index.json...) through ReadTar or ReadZip, which
// hold the rules no format may forget: member names that cannot escape
// a directory, a wanted member read once (a second copy is refused, not
// parsed again), the read stopped at the first wanted member unless the
// format must see every one, and bounds on everything an upload could
// make the process do: a wanted member's size, what a compressed stream
// may unpack (absolutely and relative to its packed size: a bomb is cut
// early), a zip's directory and entries (checked from its end record
// before anything is allocated for them), and how many inspections run
// at once. A format says what it wants (ArchiveRules); the bounds are
// written once, here.

// ArchiveLimits bound one read of an archive. Zero fields take
// DefaultArchiveLimits's.
type ArchiveLimits struct {
	Member    int64 // bytes of a wanted member, unpacked
	Unpacked  int64 // bytes a compressed tar stream may unpack in all
	Ratio     int64 // unpacked bytes per packed byte a compressed stream may reach (beyond its first MiB)
	Entries   int   // members of an archive
	Directory int64 // bytes of a zip's central directory
}

// DefaultArchiveLimits are far above real packages' metadata and far below
// what would hurt: a few hundred KiB of metadata, an unpacking ratio that
// real archives (text compresses ten to one) never reach.
var DefaultArchiveLimits = ArchiveLimits{Member: 512 << 10, Unpacked: 512 << 20, Ratio: 100, Entries: 100000, Directory: 32 << 20}

func (l ArchiveLimits) orDefault() ArchiveLimits {
	d := DefaultArchiveLimits
	if l.Member > 0 {
		d.Member = l.Member
	}
	if l.Unpacked > 0 {
		d.Unpacked = l.Unpacked
	}
	if l.Ratio > 0 {
		d.Ratio = l.Ratio
	}
	if l.Entries > 0 {
		d.Entries = l.Entries
	}
	if l.Directory > 0 {
		d.Directory = l.Directory
	}
	return d
}

// Compression is how a tar stream is compressed.
type Compression int

const (
	Uncompressed Compression = iota
	Gzip
	Bzip2
	Zstd
)

// Entry is a member of an archive as a format's rules see it.
type Entry struct {
	Name    string // cleaned: no leading "./"
	Dir     bool
	Regular bool // a regular file (tar: not a link, device or fifo)
	Size    int64
}

// ArchiveRules are what a format wants of one archive.
type ArchiveRules struct {
	// What names the archive in errors: "a gem", "a chart archive".
	What string
	// Want reports whether the format reads the member of this name.
	Want func(name string) bool
	// Check, when set, is told of every member before it is read; an
	// error refuses the archive (a member outside a chart's directory).
	Check func(e Entry) error
	// All reads every member Want names; otherwise the read stops at the
	// first.
	All bool
	// Done, when set with All, ends the read once it says the members read
	// so far are enough (metadata at the front of a package spares
	// unpacking the rest); not with Exact, which reads to the end.
	Done func(got []Member) bool
	// Stream, when set, takes each wanted member as a stream instead of
	// its bytes (an archive inside the archive: a .conda's
	// info-*.tar.zst); what it returns is the read's result.
	Stream func(ctx context.Context, name string, r io.Reader, packed int64) ([]Member, error)
	// Exact: a tar stream is read to its end, and nothing may follow it
	// but tar's padding (no second gzip member, no bytes after the
	// compressed stream): what is stored is exactly what was checked.
	Exact bool
	// Layer: the archive is a file system's layer (an image's), read for
	// what is installed in it: members Want names that are not regular
	// files (links, devices) are passed over instead of refusing the
	// archive, and a name met twice is read again (the later copy is
	// what the file system holds).
	Layer  bool
	Limits ArchiveLimits
}

// Member is a member read: its name and its bytes.
type Member struct {
	Name string
	Data []byte
}

// First is the data of the first member, nil when there is none.
func First(ms []Member) []byte {
	if len(ms) == 0 {
		return nil
	}
	return ms[0].Data
}

// inspections bounds the archives read at once: unpacking is CPU, and a
// flood of uploads must not take every core. An archive read inside
// another (from a Stream) uses the outer read's slot.
var inspections = make(chan struct{}, max(2, runtime.NumCPU()))

type inspectingKey struct{}

// BoundedElsewhere marks ctx as a caller that bounds its archive reads
// itself (the scanner's workers, two at a time by default): its reads,
// which can take a while (an image's layers), do not take one of the
// slots uploads share.
func BoundedElsewhere(ctx context.Context) context.Context {
	return context.WithValue(ctx, inspectingKey{}, true)
}

func inspect(ctx context.Context) (context.Context, func(), error) {
	if ctx.Value(inspectingKey{}) != nil {
		return ctx, func() {}, nil
	}
	select {
	case inspections <- struct{}{}:
		return context.WithValue(ctx, inspectingKey{}, true), func() { <-inspections }, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func (rules ArchiveRules) bad(why string, args ...any) error {
	return BadRequest("not "+rules.What+": "+why, args...)
}

// ReadTar reads a tar stream of packed bytes (compressed with c) by the
// rules and returns the members it wants.
func ReadTar(ctx context.Context, r io.Reader, packed int64, c Compression, rules ArchiveRules) ([]Member, error) {
	ctx, release, err := inspect(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	lim := rules.Limits.orDefault()
	var src io.Reader
	var raw *bufio.Reader // Exact: the compressed stream, to see that it ends with its archive
	switch c {
	case Uncompressed:
		src = r
	case Gzip:
		if rules.Exact {
			raw = bufio.NewReader(r) // a ByteReader: gzip reads no further than its member
			r = raw
		}
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, rules.bad("not gzip'd (%v)", err)
		}
		zr.Multistream(!rules.Exact)
		src = zr
	case Bzip2:
		src = bzip2.NewReader(r)
	case Zstd:
		dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(64<<20), zstd.WithDecoderMaxWindow(32<<20))
		if err != nil {
			return nil, rules.bad("not zstd (%v)", err)
		}
		defer dec.Close()
		src = dec
	}
	bound := lim.Unpacked
	if c != Uncompressed {
		bound = min(lim.Unpacked, 1<<20+lim.Ratio*max(packed, 0))
	}
	counted := &boundedReader{r: src, left: bound}
	tr := tar.NewReader(counted)
	var out []Member
	seen := map[string]bool{}
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if rules.Exact {
				return out, rules.exactEnd(counted, raw)
			}
			return out, nil
		}
		if err != nil {
			if counted.over {
				return nil, rules.bad("unpacks to more than %d bytes (%d times its size)", bound, lim.Ratio)
			}
			return nil, rules.bad("not a readable tar archive (%v)", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if entries >= lim.Entries {
			return nil, rules.bad("more than %d members", lim.Entries)
		}
		e := Entry{Name: strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/"), Dir: h.Typeflag == tar.TypeDir,
			Regular: h.Typeflag == tar.TypeReg, Size: h.Size}
		if e.Name == "" && e.Dir {
			continue // "./", the archive's own directory
		}
		wanted, err := rules.admit(e, seen)
		if err != nil {
			return nil, err
		}
		if !wanted {
			continue
		}
		ms, err := rules.take(ctx, e, tr, h.Size)
		if err != nil {
			if counted.over {
				return nil, rules.bad("unpacks to more than %d bytes (%d times its size)", bound, lim.Ratio)
			}
			return nil, err
		}
		if out = append(out, ms...); !rules.All || rules.done(out) {
			return out, nil
		}
	}
}

func (rules ArchiveRules) done(got []Member) bool {
	return rules.Done != nil && !rules.Exact && rules.Done(got)
}

// maxTrailer bounds what may follow a tar archive's end marker (tar pads
// archives to a 10 KiB record).
const maxTrailer = 64 << 10

// exactEnd checks that nothing follows the archive (see Exact); reading
// to the end checks gzip's CRC and length too.
func (rules ArchiveRules) exactEnd(unpacked io.Reader, raw *bufio.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(unpacked, maxTrailer+1))
	switch {
	case err != nil:
		return rules.bad("malformed (%v)", err)
	case n > maxTrailer:
		return rules.bad("data after the end of the archive")
	}
	if raw != nil {
		if _, err := raw.ReadByte(); !errors.Is(err, io.EOF) {
			return rules.bad("data after the end of the gzip stream")
		}
	}
	return nil
}

// admit applies the rules to a member: an error refuses the archive;
// false skips the member.
func (rules ArchiveRules) admit(e Entry, seen map[string]bool) (bool, error) {
	if err := CheckMemberName(e.Name); err != nil {
		return false, rules.bad("%v", err)
	}
	if rules.Check != nil {
		if err := rules.Check(e); err != nil {
			return false, err
		}
	}
	switch {
	case e.Dir || !rules.Want(e.Name):
		return false, nil
	case !e.Regular && rules.Layer:
		return false, nil
	case !e.Regular:
		return false, rules.bad("%s is not a regular file", e.Name)
	case seen[e.Name] && !rules.Layer:
		return false, rules.bad("%s is in it twice", e.Name)
	}
	seen[e.Name] = true
	return true, nil
}

// take reads a wanted member from r (packed bytes of it): handed to
// Stream, or its bytes, within the member bound whatever its header
// says.
func (rules ArchiveRules) take(ctx context.Context, e Entry, r io.Reader, packed int64) ([]Member, error) {
	if rules.Stream != nil {
		return rules.Stream(ctx, e.Name, r, packed)
	}
	lim := rules.Limits.orDefault()
	if e.Size > lim.Member {
		return nil, rules.bad("%s is larger than %d bytes", e.Name, lim.Member)
	}
	data, err := io.ReadAll(io.LimitReader(r, lim.Member+1))
	switch {
	case err != nil:
		return nil, rules.bad("%s cannot be read (%v)", e.Name, err)
	case int64(len(data)) > lim.Member:
		return nil, rules.bad("%s is larger than %d bytes", e.Name, lim.Member)
	}
	return []Member{{Name: e.Name, Data: data}}, nil
}

// ReadZip reads a zip archive of size bytes by the rules and returns the
// members it wants. Its end record is read first: an archive that claims
// more entries or a larger directory than the limits (or that needs
// zip64, only for more than 65535 entries or 4 GiB) is refused before
// anything is allocated for them, and the directory is read within a
// budget of what the record says.
func ReadZip(ctx context.Context, ra io.ReaderAt, size int64, rules ArchiveRules) ([]Member, error) {
	ctx, release, err := inspect(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	lim := rules.Limits.orDefault()
	if err := rules.checkDirectoryEnd(ra, size, lim); err != nil {
		return nil, err
	}
	budget := &budgetReaderAt{ra: ra, left: lim.Directory + 2*(eocdLen+65535)}
	zr, err := zip.NewReader(budget, size)
	if err != nil {
		return nil, rules.bad("not a zip archive (%v)", err)
	}
	// The whole directory passes the rules before any member is read.
	type member struct {
		e Entry
		f *zip.File
	}
	var wanted []member
	seen := map[string]bool{}
	for _, f := range zr.File {
		dir := strings.HasSuffix(f.Name, "/")
		e := Entry{Name: strings.TrimSuffix(f.Name, "/"), Dir: dir, Regular: dir || f.Mode().IsRegular(), Size: int64(f.UncompressedSize64)}
		ok, err := rules.admit(e, seen)
		if err != nil {
			return nil, err
		}
		if ok {
			wanted = append(wanted, member{e, f})
		}
	}
	var out []Member
	for _, m := range wanted {
		// The member's data: its local header and compressed bytes. Its
		// size in the directory is the client's word: take reads at most
		// the bound, and the zip reader's CRC and size checks catch a lie.
		budget.left = int64(min(m.f.CompressedSize64, uint64(size))) + 1<<16
		rc, err := m.f.Open()
		if err != nil {
			return nil, rules.bad("%s cannot be read (%v)", m.e.Name, err)
		}
		ms, err := rules.take(ctx, m.e, rc, int64(m.f.CompressedSize64))
		rc.Close()
		if err != nil {
			return nil, err
		}
		if out = append(out, ms...); !rules.All || rules.done(out) {
			break
		}
	}
	return out, nil
}

// CheckMemberName refuses names that would escape the directory an
// archive is unpacked into (whoever unpacks it: the client does), and
// names no file system takes.
func CheckMemberName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") || len(name) > 4096 {
		return fmt.Errorf("member %q has an unsafe name", trunc(name))
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || (len(seg) == 2 && seg[1] == ':') {
			return fmt.Errorf("member %q climbs out of its directory", trunc(name))
		}
	}
	return nil
}

func trunc(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// Gunzip unpacks a gzip'd member (a gem's metadata.gz) of at most max
// bytes unpacked.
func Gunzip(data []byte, max int64, what string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, BadRequest("%s is not gzip'd: %v", what, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, max+1))
	if err != nil || int64(len(raw)) > max {
		return nil, BadRequest("%s is unreadable or unpacks to more than %d bytes", what, max)
	}
	return raw, nil
}

// boundedReader fails once more than left bytes have come through.
type boundedReader struct {
	r    io.Reader
	left int64
	over bool
}

var errUnpackedTooMuch = errors.New("the archive unpacks to more than its bound")

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.over = true
		return 0, errUnpackedTooMuch
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// eocdLen is the size of the zip end-of-central-directory record.
const eocdLen = 22

// budgetReaderAt refuses reads once left bytes have been read.
type budgetReaderAt struct {
	ra   io.ReaderAt
	left int64
}

var errBudget = errors.New("archive reads past its declared central directory")

func (b *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > b.left {
		return 0, errBudget
	}
	b.left -= int64(len(p))
	return b.ra.ReadAt(p, off)
}

// checkDirectoryEnd reads the end-of-central-directory record before
// archive/zip does (see ReadZip).
func (rules ArchiveRules) checkDirectoryEnd(ra io.ReaderAt, size int64, lim ArchiveLimits) error {
	if size < eocdLen {
		return rules.bad("not a zip archive (too short)")
	}
	tail := min(size, eocdLen+65535) // the record plus the longest comment
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return rules.bad("cannot read (%v)", err)
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return rules.bad("not a zip archive (no end of central directory)")
	}
	rec := buf[i:]
	entries := binary.LittleEndian.Uint16(rec[10:12])
	dirSize := binary.LittleEndian.Uint32(rec[12:16])
	dirOffset := binary.LittleEndian.Uint32(rec[16:20])
	// archive/zip looks for zip64 records when any of these is all ones.
	if entries == 0xFFFF || dirSize == 0xFFFF || dirSize == 0xFFFFFFFF || dirOffset == 0xFFFFFFFF {
		return rules.bad("zip64 archives are not accepted")
	}
	// A well-formed archive's directory ends where the end record starts.
	if int64(dirOffset)+int64(dirSize) != size-tail+int64(i) {
		return rules.bad("its central directory does not end at the end record")
	}
	if int(entries) > lim.Entries {
		return rules.bad("more than %d members", lim.Entries)
	}
	if int64(dirSize) > lim.Directory {
		return rules.bad("central directory larger than %d bytes", lim.Directory)
	}
	return nil
}
