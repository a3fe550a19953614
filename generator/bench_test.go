package generator

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkGenerate measures Generate on each shared spec (with a root
// x-idempotent) and reports generated lines per operation.
func BenchmarkGenerate(b *testing.B) {
	for _, tc := range realSpecs {
		b.Run(strings.Split(tc.file, ".")[0], func(b *testing.B) {
			cfg := realSpecConfig(b, tc.file)
			b.ReportAllocs()
			var files []File
			for b.Loop() {
				var err error
				if files, _, err = Generate(cfg); err != nil {
					b.Fatal(err)
				}
			}
			lines := 0
			for _, f := range files {
				lines += bytes.Count(f.Content, []byte("\n"))
			}
			doc, _ := loadSpec(&cfg)
			ops := 0
			for _, p := range doc.Paths.Map() {
				ops += len(p.Operations())
			}
			b.ReportMetric(float64(lines), "lines")
			b.ReportMetric(float64(lines)/float64(ops), "lines/operation")
		})
	}
}
