// Package routers mounts the payments example's generated handler under a
// prefix on net/http, chi, echo and gin: the recipes of the README, compiled and
// driven over HTTP by this package's tests. It is a module of its own so
// that neither idemgen nor the payments example depends on these routers.
package routers

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/labstack/echo/v4"

	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/runtime/idem"
)

// ServeMux mounts the whole handler at /api/ on a net/http.ServeMux, which
// passes the URL path on whole: the handler is told its base path.
func ServeMux(srv api.Server, engine *idem.Engine) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/api/", api.NewHandler(srv, engine, api.WithBasePath("/api")))
	return mux
}

// ChiMount mounts the whole handler at /api. chi's Mount routes by a path
// it keeps in its own context and leaves Request.URL.Path whole, which is
// what the generated handler (a net/http.ServeMux) matches: so the handler
// is told its base path.
func ChiMount(srv api.Server, engine *idem.Engine) http.Handler {
	r := chi.NewRouter()
	r.Mount("/api", api.NewHandler(srv, engine, api.WithBasePath("/api")))
	return r
}

// ChiStripPrefix mounts the whole handler at /api behind http.StripPrefix,
// which shortens Request.URL.Path: the handler keeps no base path.
func ChiStripPrefix(srv api.Server, engine *idem.Engine) http.Handler {
	r := chi.NewRouter()
	r.Mount("/api", http.StripPrefix("/api", api.NewHandler(srv, engine, api.WithBasePath(""))))
	return r
}

// ChiRoutes registers every operation as a chi route of its own, inside a
// chi sub-router at /api (which routes by the path below /api), so chi's
// middleware, route context and 405s apply per operation. chi sets
// Request.PathValue, which the generated handlers read.
func ChiRoutes(srv api.Server, engine *idem.Engine) http.Handler {
	r := chi.NewRouter()
	r.Route("/api", func(r chi.Router) {
		for _, rt := range api.Routes(srv, engine, api.WithBasePath("")) {
			r.Method(rt.Method, rt.Pattern, rt.Handler)
		}
	})
	return r
}

// Echo routes everything under /api/ to the handler; echo leaves the URL
// path whole, so the handler is told its base path.
func Echo(srv api.Server, engine *idem.Engine) http.Handler {
	e := echo.New()
	e.Any("/api/*", echo.WrapHandler(api.NewHandler(srv, engine, api.WithBasePath("/api"))))
	return e
}

// Gin routes everything under /api/ to the handler; gin leaves the URL path
// whole, so the handler is told its base path.
func Gin(srv api.Server, engine *idem.Engine) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	g.Any("/api/*path", gin.WrapH(api.NewHandler(srv, engine, api.WithBasePath("/api"))))
	return g
}
