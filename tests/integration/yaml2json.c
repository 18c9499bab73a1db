/* tests/integration/yaml2json.c — YAML (every document of a file, read by
 * libyaml) to one JSON array on stdout, for tests that check manifests with
 * jq (tests/integration/deploy_manifests.sh). Mappings become objects,
 * sequences arrays, scalars strings (quoting kept out: "8080" and 8080 both
 * give "8080"; jq's tostring compares either). Anchors and aliases are
 * refused: the manifests do not use them. Exit 1 with the line on a YAML
 * error. usage: yaml2json FILE */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <yaml.h>

static json_t *convert(yaml_document_t *d, yaml_node_t *n) {
  if (!n) return json_null();
  switch (n->type) {
    case YAML_SCALAR_NODE:
      return json_stringn((const char *)n->data.scalar.value, n->data.scalar.length);
    case YAML_SEQUENCE_NODE: {
      json_t *a = json_array();
      for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
        json_array_append_new(a, convert(d, yaml_document_get_node(d, *i)));
      return a;
    }
    case YAML_MAPPING_NODE: {
      json_t *o = json_object();
      for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (!k || k->type != YAML_SCALAR_NODE) continue;
        json_object_set_new(o, (const char *)k->data.scalar.value,
                            convert(d, yaml_document_get_node(d, p->value)));
      }
      return o;
    }
    default: return json_null();
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: yaml2json FILE\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_file(&p, f);
  json_t *docs = json_array();
  int rc = 0;
  for (;;) {
    yaml_document_t d;
    if (!yaml_parser_load(&p, &d)) {
      fprintf(stderr, "%s:%zu: %s\n", argv[1], p.problem_mark.line + 1,
              p.problem ? p.problem : "YAML error");
      rc = 1;
      break;
    }
    yaml_node_t *root = yaml_document_get_root_node(&d);
    if (!root) {
      yaml_document_delete(&d);
      break;
    }
    json_array_append_new(docs, convert(&d, root));
    yaml_document_delete(&d);
  }
  yaml_parser_delete(&p);
  fclose(f);
  if (rc == 0) {
    char *s = json_dumps(docs, JSON_INDENT(1));
    if (s) puts(s);
    free(s);
  }
  json_decref(docs);
  return rc;
}
