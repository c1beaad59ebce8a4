package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Output formats.
const (
	outTable = "table"
	outJSON  = "json"
)

// view is how a kind of resource is shown: the columns of a listing, and
// the rows of one item shown alone.
type view[T any] struct {
	columns []string
	row     func(T) []string
	// detail is the field: value lines of one item; the columns' when nil.
	detail func(T) [][2]string
}

// printList prints items as a table, or as the JSON array of the
// server's objects.
func printList[T any](w io.Writer, output string, v view[T], items []Item[T]) error {
	if output == outJSON {
		if items == nil {
			items = []Item[T]{} // [] rather than null
		}
		return printJSON(w, items)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(v.columns, "\t"))
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(clean(v.row(it.Value)), "\t"))
	}
	return tw.Flush()
}

// printItem prints one item as field: value lines, or as the server's
// JSON object.
func printItem[T any](w io.Writer, output string, v view[T], it Item[T]) error {
	if output == outJSON {
		return printJSON(w, it)
	}
	var lines [][2]string
	if v.detail != nil {
		lines = v.detail(it.Value)
	} else {
		for i, cell := range v.row(it.Value) {
			lines = append(lines, [2]string{label(v.columns[i]), cell})
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintf(tw, "%s:\t%s\n", l[0], clean([]string{l[1]})[0])
	}
	return tw.Flush()
}

// label is a column's title as a field's: "EVENTS" is "Events"; ID and
// URL stay.
func label(column string) string {
	if column == "ID" || column == "URL" {
		return column
	}
	return column[:1] + strings.ToLower(column[1:])
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// clean keeps a server's text from breaking the table (tabs, newlines)
// or the terminal (control characters); an empty cell shows "-".
func clean(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		c = strings.Map(func(r rune) rune {
			switch {
			case r == '\t' || r == '\n' || r == '\r':
				return ' '
			case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
				return -1
			}
			return r
		}, c)
		if c == "" {
			c = "-"
		}
		out[i] = c
	}
	return out
}

// when is a time as tables show it: UTC, to the minute.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// whenPtr is when for an optional time, none as dflt.
func whenPtr(t *time.Time, dflt string) string {
	if t == nil {
		return dflt
	}
	return when(*t)
}

// yesNo is a boolean as tables show it.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
