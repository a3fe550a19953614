// The golden packages form one module so that they compile as users'
// code would: `cd generator/testdata/golden && GOFLAGS=-mod=mod go build ./... && go vet ./...`.
// TestGoldenCompiles does the same in a temporary copy.
module example.com/golden

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/idemgen/idemgen v0.0.0
	github.com/jackc/pgx/v5 v5.12.0
)

require (
	github.com/cloudevents/sdk-go/v2 v2.16.2 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/idemgen/idemgen => ../../..
