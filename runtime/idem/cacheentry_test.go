package idem

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// BenchmarkCacheEntryOpen is what verifying a cached outcome costs a
// replay: one HMAC-SHA256 over the entry, the checks and the decoding.
func BenchmarkCacheEntryOpen(b *testing.B) {
	id := newCacheIdentity(bytes.Repeat([]byte{7}, 32), "7716421925421831687", "payments")
	fp := bytes.Repeat([]byte{1}, 32)
	for _, size := range []int{256, 4096} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			k := Key{Tenant: "t", Operation: "createPayment", Value: "0b7a4d6e-7f0e-4a4b-9c1e-2f1f3c0e9d11"}
			sum, _ := id.record(k)
			v := id.seal(&cached{state: StateCompleted, fingerprint: fp, completedAt: time.Now(), status: 201,
				schema: "v1", headers: []byte(`{"Content-Type":["application/json"]}`), body: bytes.Repeat([]byte("x"), size)}, &sum)
			b.SetBytes(int64(len(v)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := id.open(v, &sum, fp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
