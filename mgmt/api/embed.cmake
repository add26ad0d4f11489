# cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -P embed.cmake
# FILE as `const char SYMBOL[]` (NUL-terminated) and `const size_t SYMBOL_len`
# (without the NUL), so that a document of the tree is served from the binary.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN} by embed.cmake: do not edit */\n#include <stddef.h>\n"
     "extern const char ${NAME}[];\nextern const size_t ${NAME}_len;\n"
     "const char ${NAME}[] = {\n${bytes}0x00 };\nconst size_t ${NAME}_len = ${len};\n")
