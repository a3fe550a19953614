package world

// The packages snippets may use without importing them: every snippet's
// file imports all of these (TestSnippets reads this list), and the blank
// imports here keep them in this module's go.mod.
import (
	_ "context"
	_ "encoding/json"
	_ "errors"
	_ "fmt"
	_ "log"
	_ "log/slog"
	_ "net/http"
	_ "net/http/httptest"
	_ "os"
	_ "strings"
	_ "testing"
	_ "time"

	_ "github.com/gin-gonic/gin"
	_ "github.com/go-chi/chi/v5"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/pgconn/ctxwatch"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/labstack/echo/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"

	_ "github.com/idemgen/idemgen/examples/payments"
	_ "github.com/idemgen/idemgen/examples/payments/api"
	_ "github.com/idemgen/idemgen/examples/payments/gateway"
	_ "github.com/idemgen/idemgen/examples/payments/service"
	_ "github.com/idemgen/idemgen/runtime/downstream"
	_ "github.com/idemgen/idemgen/runtime/events"
	_ "github.com/idemgen/idemgen/runtime/idem"
	_ "github.com/idemgen/idemgen/runtime/idem/admin"
	_ "github.com/idemgen/idemgen/runtime/idem/schema"
	_ "github.com/idemgen/idemgen/runtime/idemclient"
	_ "github.com/idemgen/idemgen/runtime/idemotel"
	_ "github.com/idemgen/idemgen/runtime/idemproblem"
	_ "github.com/idemgen/idemgen/runtime/idemprom"
	_ "github.com/idemgen/idemgen/runtime/idemredis"
	_ "github.com/idemgen/idemgen/runtime/idemseal"
	_ "github.com/idemgen/idemgen/runtime/pgtest"
)
