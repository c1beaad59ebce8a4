package nuget

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// The v2 feed's OData query options, as nuget 2.x writes them: a client
// without -Version asks FindPackagesById()?id='X'&$filter=IsLatestVersion
// &$orderby=Version desc&$top=1 and installs the first entry answered, so
// each option is honoured, and one the feed cannot honour is refused
// (400) rather than ignored: an ignored filter answers entries the client
// did not ask for (it installed the oldest version).

// feedEntry is a version as the feed lists it, with the flags that need
// its package's other versions.
type feedEntry struct {
	version
	latest    bool // the newest release (no prerelease) of its package
	absLatest bool // the newest version of its package, prereleases included
}

// flag marks each package's latest versions in vs (sorted by id, then
// version, as stored answers them).
func flag(vs []version) []feedEntry {
	out := make([]feedEntry, len(vs))
	for i, v := range vs {
		out[i].version = v
	}
	for end := len(out); end > 0; {
		start := end - 1
		for start > 0 && strings.EqualFold(out[start-1].ID, out[end-1].ID) {
			start--
		}
		out[end-1].absLatest = true
		for i := end - 1; i >= start; i-- {
			if !prerelease(out[i].norm) {
				out[i].latest = true
				break
			}
		}
		end = start
	}
	return out
}

func prerelease(norm string) bool { return strings.Contains(norm, "-") }

// maxPage bounds the entries of one answer; a client that wants more
// follows the feed's next link, as OData servers page.
const maxPage = 100

// feedQuery is what $filter, $orderby, $skip and $top ask.
type feedQuery struct {
	filter    func(*feedEntry) bool // nil: every entry
	order     []orderKey
	skip, top int // top < 0: no $top
}

type orderKey struct {
	cmp  func(a, b *feedEntry) int
	desc bool
}

// orderProps are the properties $orderby may name. A download count is
// not kept: every entry's is 0.
var orderProps = map[string]func(a, b *feedEntry) int{
	"Id":                func(a, b *feedEntry) int { return strings.Compare(strings.ToLower(a.ID), strings.ToLower(b.ID)) },
	"Version":           func(a, b *feedEntry) int { return compareVersions(a.norm, b.norm) },
	"NormalizedVersion": func(a, b *feedEntry) int { return compareVersions(a.norm, b.norm) },
	"Published":         func(a, b *feedEntry) int { return a.art.UploadedAt.Compare(b.art.UploadedAt) },
	"DownloadCount":     func(a, b *feedEntry) int { return 0 },
}

// parseQuery reads the query options of q.
func parseQuery(get func(string) string) (*feedQuery, error) {
	fq := &feedQuery{top: -1}
	if s := get("$filter"); s != "" {
		e, err := parseFilter(s)
		if err != nil {
			return nil, format.BadRequest("$filter %q: %s", s, err)
		}
		if e.kind != kindBool {
			return nil, format.BadRequest("$filter %q is not a condition", s)
		}
		fq.filter = func(fe *feedEntry) bool { return e.eval(fe) == true }
	}
	if s := get("$orderby"); s != "" {
		for _, part := range strings.Split(s, ",") {
			name, dir, _ := strings.Cut(strings.TrimSpace(part), " ")
			c, ok := orderProps[name]
			dir = strings.TrimSpace(dir)
			if !ok || (dir != "" && dir != "asc" && dir != "desc") {
				return nil, format.BadRequest("$orderby %q: this feed orders by Id, Version, NormalizedVersion, Published or DownloadCount, asc or desc", s)
			}
			fq.order = append(fq.order, orderKey{c, dir == "desc"})
		}
	}
	for _, o := range []struct {
		name string
		to   *int
	}{{"$skip", &fq.skip}, {"$top", &fq.top}} {
		if s := get(o.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return nil, format.BadRequest("%s must be a whole number, not %q", o.name, s)
			}
			*o.to = n
		}
	}
	return fq, nil
}

// apply filters and orders es, and cuts the page asked for (at most
// maxPage entries); more says whether entries the client asked for are
// left for a next page.
func (fq *feedQuery) apply(es []feedEntry) (page []feedEntry, more bool) {
	if fq.filter != nil {
		es = slices.DeleteFunc(es, func(e feedEntry) bool { return !fq.filter(&e) })
	}
	// Newest first by default (and between entries the order asked for
	// ties): a client that takes the first of a package's entries takes
	// its latest.
	slices.SortStableFunc(es, func(a, b feedEntry) int {
		for _, k := range fq.order {
			if c := k.cmp(&a, &b); c != 0 {
				if k.desc {
					return -c
				}
				return c
			}
		}
		return cmp.Or(orderProps["Id"](&a, &b), -compareVersions(a.norm, b.norm))
	})
	es = es[min(fq.skip, len(es)):]
	if fq.top >= 0 && fq.top < len(es) {
		es = es[:fq.top]
	}
	if len(es) > maxPage {
		return es[:maxPage], true
	}
	return es, false
}

// An OData $filter: comparisons (eq, ne) of the entry's properties,
// string functions and literals, joined by and, or, not and parentheses.
// Strings compare without regard to case, as NuGet ids do (and as the
// gallery's database compares them).

type kind int

const (
	kindString kind = iota
	kindBool
	kindNull
)

type expr struct {
	kind kind
	eval func(*feedEntry) any // a string, a bool or nil
}

func stringProp(get func(*feedEntry) string) expr {
	return expr{kindString, func(e *feedEntry) any { return get(e) }}
}

func boolProp(get func(*feedEntry) bool) expr {
	return expr{kindBool, func(e *feedEntry) any { return get(e) }}
}

var filterProps = map[string]expr{
	"Id":                      stringProp(func(e *feedEntry) string { return e.ID }),
	"Version":                 stringProp(func(e *feedEntry) string { return e.norm }),
	"NormalizedVersion":       stringProp(func(e *feedEntry) string { return e.norm }),
	"Description":             stringProp(func(e *feedEntry) string { return e.Description }),
	"Authors":                 stringProp(func(e *feedEntry) string { return e.Authors }),
	"IsLatestVersion":         boolProp(func(e *feedEntry) bool { return e.latest }),
	"IsAbsoluteLatestVersion": boolProp(func(e *feedEntry) bool { return e.absLatest }),
	"IsPrerelease":            boolProp(func(e *feedEntry) bool { return prerelease(e.norm) }),
	"Listed":                  boolProp(func(e *feedEntry) bool { return true }),
}

// filterFuncs are the functions a filter may call: each takes strings.
var filterFuncs = map[string]struct {
	args int
	kind kind
	call func(a []string) any
}{
	"tolower":     {1, kindString, func(a []string) any { return strings.ToLower(a[0]) }},
	"toupper":     {1, kindString, func(a []string) any { return strings.ToUpper(a[0]) }},
	"trim":        {1, kindString, func(a []string) any { return strings.TrimSpace(a[0]) }},
	"substringof": {2, kindBool, func(a []string) any { return strings.Contains(strings.ToLower(a[1]), strings.ToLower(a[0])) }},
	"startswith":  {2, kindBool, func(a []string) any { return strings.HasPrefix(strings.ToLower(a[0]), strings.ToLower(a[1])) }},
	"endswith":    {2, kindBool, func(a []string) any { return strings.HasSuffix(strings.ToLower(a[0]), strings.ToLower(a[1])) }},
}

type token struct {
	literal bool // a quoted string: text is its value
	text    string
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{text: s[i : i+1]})
			i++
		case c == '\'':
			var b strings.Builder
			for i++; ; i++ {
				if i >= len(s) {
					return nil, fmt.Errorf("a string is not closed")
				}
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' { // a doubled quote is one
						i++
					} else {
						i++
						break
					}
				}
				b.WriteByte(s[i])
			}
			out = append(out, token{literal: true, text: b.String()})
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q", c)
		}
	}
	return out, nil
}

type filterParser struct {
	toks []token
	pos  int
}

func parseFilter(s string) (expr, error) {
	toks, err := tokenize(s)
	if err != nil {
		return expr{}, err
	}
	p := &filterParser{toks: toks}
	e, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos].text)
	}
	return e, err
}

// is consumes the next token if it is the word or punctuation w.
func (p *filterParser) is(w string) bool {
	if p.pos < len(p.toks) && !p.toks[p.pos].literal && p.toks[p.pos].text == w {
		p.pos++
		return true
	}
	return false
}

func (p *filterParser) or() (expr, error) {
	return p.binary("or", p.and, func(a, b bool) bool { return a || b })
}

func (p *filterParser) and() (expr, error) {
	return p.binary("and", p.not, func(a, b bool) bool { return a && b })
}

func (p *filterParser) binary(op string, operand func() (expr, error), join func(a, b bool) bool) (expr, error) {
	l, err := operand()
	for err == nil && p.is(op) {
		var r expr
		if r, err = operand(); err != nil {
			break
		}
		if l.kind != kindBool || r.kind != kindBool {
			return expr{}, fmt.Errorf("%s joins conditions", op)
		}
		a, b := l.eval, r.eval
		l = expr{kindBool, func(e *feedEntry) any { return join(a(e) == true, b(e) == true) }}
	}
	return l, err
}

func (p *filterParser) not() (expr, error) {
	if !p.is("not") {
		return p.compare()
	}
	x, err := p.not()
	if err == nil && x.kind != kindBool {
		err = fmt.Errorf("not takes a condition")
	}
	return expr{kindBool, func(e *feedEntry) any { return x.eval(e) != true }}, err
}

func (p *filterParser) compare() (expr, error) {
	l, err := p.primary()
	if err != nil {
		return l, err
	}
	var ne bool
	switch {
	case p.is("eq"):
	case p.is("ne"):
		ne = true
	default:
		return l, nil
	}
	r, err := p.primary()
	if err != nil {
		return r, err
	}
	if l.kind != r.kind && l.kind != kindNull && r.kind != kindNull {
		return expr{}, fmt.Errorf("a comparison of a string with a condition")
	}
	a, b := l.eval, r.eval
	return expr{kindBool, func(e *feedEntry) any {
		x, y := a(e), b(e)
		sx, okx := x.(string)
		sy, oky := y.(string)
		return (okx && oky && strings.EqualFold(sx, sy) || !(okx && oky) && x == y) != ne
	}}, nil
}

func (p *filterParser) primary() (expr, error) {
	if p.pos >= len(p.toks) {
		return expr{}, fmt.Errorf("it ends too soon")
	}
	t := p.toks[p.pos]
	p.pos++
	switch {
	case t.literal:
		return expr{kindString, func(*feedEntry) any { return t.text }}, nil
	case t.text == "(":
		e, err := p.or()
		if err == nil && !p.is(")") {
			err = fmt.Errorf("a parenthesis is not closed")
		}
		return e, err
	case t.text == "true" || t.text == "false":
		v := t.text == "true"
		return expr{kindBool, func(*feedEntry) any { return v }}, nil
	case t.text == "null":
		return expr{kindNull, func(*feedEntry) any { return nil }}, nil
	}
	if prop, ok := filterProps[t.text]; ok {
		return prop, nil
	}
	fn, ok := filterFuncs[t.text]
	if !ok || !p.is("(") {
		return expr{}, fmt.Errorf("this feed does not filter on %q", t.text)
	}
	var args []expr
	for len(args) == 0 || p.is(",") {
		a, err := p.or()
		if err != nil {
			return a, err
		}
		if a.kind != kindString {
			return expr{}, fmt.Errorf("%s takes strings", t.text)
		}
		args = append(args, a)
	}
	if !p.is(")") || len(args) != fn.args {
		return expr{}, fmt.Errorf("%s takes %d arguments", t.text, fn.args)
	}
	return expr{fn.kind, func(e *feedEntry) any {
		vals := make([]string, len(args))
		for i, a := range args {
			vals[i], _ = a.eval(e).(string)
		}
		return fn.call(vals)
	}}, nil
}
