package generator

// The model's names as they were before the model had a package of its own
// (generator/model): templates, conformance and other tools reading
// Spec.Model name them there now. These aliases go in v0.3.0.

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/model"
)

type (
	// Model is model.Model.
	//
	// Deprecated: use model.Model.
	Model = model.Model
	// Type is model.Type.
	//
	// Deprecated: use model.Type.
	Type = model.Type
	// TypeKind is model.TypeKind.
	//
	// Deprecated: use model.TypeKind.
	TypeKind = model.TypeKind
	// Field is model.Field.
	//
	// Deprecated: use model.Field.
	Field = model.Field
	// Default is model.Default.
	//
	// Deprecated: use model.Default.
	Default = model.Default
	// EnumValue is model.EnumValue.
	//
	// Deprecated: use model.EnumValue.
	EnumValue = model.EnumValue
	// Variant is model.Variant.
	//
	// Deprecated: use model.Variant.
	Variant = model.Variant
	// GoKind is model.GoKind.
	//
	// Deprecated: use model.GoKind.
	GoKind = model.GoKind
	// GoType is model.GoType.
	//
	// Deprecated: use model.GoType.
	GoType = model.GoType
	// Operation is model.Operation.
	//
	// Deprecated: use model.Operation.
	Operation = model.Operation
	// OperationNames is model.OperationNames.
	//
	// Deprecated: use model.OperationNames.
	OperationNames = model.OperationNames
	// Param is model.Param.
	//
	// Deprecated: use model.Param.
	Param = model.Param
	// Body is model.Body.
	//
	// Deprecated: use model.Body.
	Body = model.Body
	// BodyMedia is model.BodyMedia.
	//
	// Deprecated: use model.BodyMedia.
	BodyMedia = model.BodyMedia
	// Response is model.Response.
	//
	// Deprecated: use model.Response.
	Response = model.Response
	// SharedResponse is model.SharedResponse.
	//
	// Deprecated: use model.SharedResponse.
	SharedResponse = model.SharedResponse
	// Header is model.Header.
	//
	// Deprecated: use model.Header.
	Header = model.Header
	// ResponseHeaderSet is model.ResponseHeaderSet.
	//
	// Deprecated: use model.ResponseHeaderSet.
	ResponseHeaderSet = model.ResponseHeaderSet
	// SecurityScheme is model.SecurityScheme.
	//
	// Deprecated: use model.SecurityScheme.
	SecurityScheme = model.SecurityScheme
	// SecurityUse is model.SecurityUse.
	//
	// Deprecated: use model.SecurityUse.
	SecurityUse = model.SecurityUse
	// SecurityRequirement is model.SecurityRequirement.
	//
	// Deprecated: use model.SecurityRequirement.
	SecurityRequirement = model.SecurityRequirement
	// Webhook is model.Webhook.
	//
	// Deprecated: use model.Webhook.
	Webhook = model.Webhook
	// ReqSchema is model.ReqSchema.
	//
	// Deprecated: use model.ReqSchema.
	ReqSchema = model.ReqSchema
	// ReqProp is model.ReqProp.
	//
	// Deprecated: use model.ReqProp.
	ReqProp = model.ReqProp
	// ReqMapping is model.ReqMapping.
	//
	// Deprecated: use model.ReqMapping.
	ReqMapping = model.ReqMapping
	// RequestLimits is model.RequestLimits.
	//
	// Deprecated: use model.RequestLimits.
	RequestLimits = model.RequestLimits
	// Policy is model.Policy.
	//
	// Deprecated: use model.Policy.
	Policy = model.Policy
	// ParamRef is model.ParamRef.
	//
	// Deprecated: use model.ParamRef.
	ParamRef = model.ParamRef
	// PathPart is model.PathPart.
	//
	// Deprecated: use model.PathPart.
	PathPart = model.PathPart
	// PathSegment is model.PathSegment.
	//
	// Deprecated: use model.PathSegment.
	PathSegment = model.PathSegment
	// RouteGroup is model.RouteGroup.
	//
	// Deprecated: use model.RouteGroup.
	RouteGroup = model.RouteGroup
	// ClientModel is model.ClientModel.
	//
	// Deprecated: use model.ClientModel.
	ClientModel = model.ClientModel
	// SplitModel is model.SplitModel.
	//
	// Deprecated: use model.SplitModel.
	SplitModel = model.SplitModel
)

const (
	// Deprecated: use model.KindStruct.
	KindStruct = model.KindStruct
	// Deprecated: use model.KindAlias.
	KindAlias = model.KindAlias
	// Deprecated: use model.KindEnum.
	KindEnum = model.KindEnum
	// Deprecated: use model.KindUnion.
	KindUnion = model.KindUnion
	// Deprecated: use model.GoAny.
	GoAny = model.GoAny
	// Deprecated: use model.GoBuiltin.
	GoBuiltin = model.GoBuiltin
	// Deprecated: use model.GoNamed.
	GoNamed = model.GoNamed
	// Deprecated: use model.GoTime.
	GoTime = model.GoTime
	// Deprecated: use model.GoUUID.
	GoUUID = model.GoUUID
	// Deprecated: use model.GoBytes.
	GoBytes = model.GoBytes
	// Deprecated: use model.GoSlice.
	GoSlice = model.GoSlice
	// Deprecated: use model.GoMap.
	GoMap = model.GoMap
	// Deprecated: use model.GoPointer.
	GoPointer = model.GoPointer
	// Deprecated: use model.GoDate.
	GoDate = model.GoDate
	// Deprecated: use model.GoNullable.
	GoNullable = model.GoNullable
	// Deprecated: use model.GoOrEmpty.
	GoOrEmpty = model.GoOrEmpty
	// Deprecated: use model.GoReader.
	GoReader = model.GoReader
	// Deprecated: use model.GoFile.
	GoFile = model.GoFile
)

// DefaultPolicy is model.DefaultPolicy.
//
// Deprecated: use model.DefaultPolicy.
func DefaultPolicy() Policy { return model.DefaultPolicy() }

// ParameterSchema is model.ParameterSchema.
//
// Deprecated: use model.ParameterSchema.
func ParameterSchema(p *openapi3.Parameter) *openapi3.SchemaRef { return model.ParameterSchema(p) }
