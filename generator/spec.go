package generator

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/model"
)

// Spec is a loaded OpenAPI document and the model idemgen builds from it,
// for tools that drive a live service from the spec rather than generate
// code (idemgen conformance). The model is the one Generate renders:
// operations, resolved x-idempotent policies, parameters and bodies.
type Spec struct {
	Doc      *openapi3.T
	Model    *model.Model
	Warnings []Warning
}

// Load loads the spec named by cfg and builds its model as Generate does,
// without rendering or writing anything. A spec with errors yields a
// *SpecError listing all of them.
func Load(cfg Config) (*Spec, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	doc, err := loadSpec(&cfg)
	if err != nil {
		return nil, err
	}
	if err := cfg.decideSplit(doc); err != nil {
		return nil, err
	}
	warnings := specWarnings(doc, specName(&cfg), false)
	m, err := model.Build(doc, modelOptions(&cfg))
	if err != nil {
		return nil, err
	}
	return &Spec{Doc: doc, Model: m, Warnings: append(warnings, m.Warnings...)}, nil
}

// Operation returns the spec's operation that o was built from.
func (s *Spec) Operation(o *model.Operation) *openapi3.Operation {
	item := s.Doc.Paths.Value(o.Path)
	if item == nil {
		return nil
	}
	return item.GetOperation(o.Method)
}
