/* placeholder so that a module with no sources yet still builds */
typedef int gw_empty_translation_unit;
