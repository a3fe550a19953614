package idemtype

import (
	"cmp"
	"database/sql/driver"
	"fmt"
	"time"
)

// Date is a calendar date without a time of day or zone: OpenAPI's
// `format: date`, RFC 3339's full-date (2006-01-02). Generated types use it
// for such strings; it encodes as a JSON string and as text (parameters,
// headers), and as a PostgreSQL date through pgx or database/sql (Scan and
// Value). The zero value is the zero date 0000-00-00, which IsZero reports.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDate parses an RFC 3339 full-date such as 2026-02-28; a date that
// does not exist (2026-02-30) is an error.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, fmt.Errorf("%q is not a date such as 2006-01-02", s)
	}
	return DateOf(t), nil
}

// DateOf returns the date of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{y, m, d}
}

// String returns the date as 2006-01-02.
func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day) }

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// In returns midnight of d in loc.
func (d Date) In(loc *time.Location) time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// Compare returns -1, 0 or +1 as d is before, equal to or after e.
func (d Date) Compare(e Date) int {
	if c := cmp.Compare(d.Year, e.Year); c != 0 {
		return c
	}
	if c := cmp.Compare(d.Month, e.Month); c != 0 {
		return c
	}
	return cmp.Compare(d.Day, e.Day)
}

// MarshalText encodes d as 2006-01-02 (a JSON string in encoding/json).
func (d Date) MarshalText() ([]byte, error) {
	if d.Year < 0 || d.Year > 9999 {
		return nil, fmt.Errorf("date %v: year outside 0000..9999", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText parses an RFC 3339 full-date.
func (d *Date) UnmarshalText(b []byte) error {
	v, err := ParseDate(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Scan reads a date column (database/sql.Scanner, which pgx uses too, in
// the text and the binary format): a time.Time, whose date in its own
// location it takes, or the text of a date, 2006-01-02. NULL is an error,
// as for any value type: scan a nullable column into a *Date. PostgreSQL's
// infinity and -infinity are no date, and an error too.
func (d *Date) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*d = DateOf(v)
		return nil
	case string:
		return d.UnmarshalText([]byte(v))
	case []byte:
		return d.UnmarshalText(v)
	case nil:
		return fmt.Errorf("idemtype: cannot scan NULL into a Date (scan a nullable column into a *Date)")
	}
	return fmt.Errorf("idemtype: cannot scan %T (%v) into a Date", src, src)
}

// Value encodes d as a query argument (database/sql/driver.Valuer, which
// pgx uses too): midnight UTC of d, which PostgreSQL stores as the date d
// in a date column. A date that does not exist (the zero Date, a 30
// February) is an error rather than another day.
func (d Date) Value() (driver.Value, error) {
	t := d.In(time.UTC)
	if DateOf(t) != d {
		return nil, fmt.Errorf("idemtype: %v is not a date", d)
	}
	return t, nil
}
