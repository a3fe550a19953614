package generator

import (
	"regexp"
	"strings"
	"testing"
)

// sharedSpec uses component Doc (a binary member, a nested component with
// one, a recursive one) in a JSON body and a multipart body; %A% and %B%
// are the two paths, so that either use can come first.
const sharedSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  %A%:
    post:
      operationId: createDoc
      x-idempotent: false
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Doc'}
      responses:
        '200': {description: ok}
  %B%:
    post:
      operationId: uploadDoc
      x-idempotent: false
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {$ref: '#/components/schemas/Doc'}
      responses:
        '200': {description: ok}
components:
  schemas:
    Doc:
      type: object
      required: [content]
      properties:
        content: {type: string, format: binary}
        meta: {$ref: '#/components/schemas/Meta'}
        folder: {$ref: '#/components/schemas/Folder'}
        tags: {type: array, items: {$ref: '#/components/schemas/Tag'}}
    Meta:
      type: object
      properties:
        thumb: {type: string, format: binary}
    Folder:
      type: object
      properties:
        icon: {type: string, format: binary}
        children: {type: array, items: {$ref: '#/components/schemas/Folder'}}
    Tag:
      type: object
      properties:
        name: {type: string}
`

// TestSharedSchemaTypes: a component schema taken by a JSON body and a
// multipart body has a type per representation where they differ (a binary
// member somewhere below it): Doc with []byte, DocMultipart with idemtype.File,
// nested and recursive components alike; Tag, without one, is shared. The
// types are the same whichever use comes first.
func TestSharedSchemaTypes(t *testing.T) {
	var first string
	for _, order := range [][2]string{{"/a", "/b"}, {"/b", "/a"}} {
		spec := strings.NewReplacer("%A%", order[0], "%B%", order[1]).Replace(sharedSpec)
		files, warns, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "api"})
		if err != nil {
			t.Fatal(err)
		}
		if len(warns) > 0 {
			t.Errorf("warnings: %v", warns)
		}
		var types, server string
		for _, f := range files {
			switch {
			case strings.HasSuffix(f.Name, "types.gen.go"):
				types = string(f.Content)
			case strings.HasSuffix(f.Name, "server.gen.go"):
				server = string(f.Content)
			}
		}
		for _, want := range []string{
			`(?m)^type Doc struct \{\n(\t.*\n)*\tContent \[\]byte `,
			`(?m)^type DocMultipart struct \{\n(\t.*\n)*\tContent idemtype\.File `,
			`(?m)^type DocMultipart struct \{\n(\t.*\n)*\tMeta +\*MetaMultipart `,
			`(?m)^type DocMultipart struct \{\n(\t.*\n)*\tTags +\[\]Tag `,
			`(?m)^type Doc struct \{\n(\t.*\n)*\tMeta +\*Meta `,
			`(?m)^type FolderMultipart struct \{\n(\t.*\n)*\tChildren \[\]FolderMultipart `,
			`(?m)^type Folder struct \{\n(\t.*\n)*\tChildren \[\]Folder `,
			`DocMultipart is generated from #/components/schemas/Doc as multipart/form-data`,
			`(?m)^\tBody DocMultipart // multipart/form-data`,
			`(?m)^\tBody Doc // application/json`,
		} {
			if !regexp.MustCompile(want).MatchString(types + server) {
				t.Errorf("paths %v: generated code does not match %s", order, want)
			}
		}
		if strings.Contains(types, "TagMultipart") {
			t.Errorf("paths %v: Tag has no binary member, yet a multipart variant", order)
		}
		var component strings.Builder
		for _, name := range []string{"Doc", "DocMultipart", "Meta", "MetaMultipart", "Folder", "FolderMultipart", "Tag"} {
			m := regexp.MustCompile(`(?m)^type ` + name + ` struct \{\n(\t.*\n)*\}`).FindString(types)
			if m == "" {
				t.Errorf("paths %v: no type %s", order, name)
			}
			component.WriteString(m)
		}
		if first == "" {
			first = component.String()
		} else if component.String() != first {
			t.Errorf("the component types depend on which use comes first:\n%s\n%s", first, component.String())
		}
	}
}

// TestSharedSchemaRename: the multipart variant is renamed by its location,
// the component's with " as multipart/form-data".
func TestSharedSchemaRename(t *testing.T) {
	spec := strings.NewReplacer("%A%", "/a", "%B%", "/b").Replace(sharedSpec)
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "api",
		Rename: map[string]Rename{"#/components/schemas/Doc as multipart/form-data": {Name: "DocUpload"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name, "types.gen.go") {
			if s := string(f.Content); !strings.Contains(s, "type DocUpload struct") || strings.Contains(s, "DocMultipart") {
				t.Errorf("rename of the multipart variant not applied:\n%s", s)
			}
		}
	}
}
