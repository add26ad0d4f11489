# cmake -DHDR=FILE -P init_casts.cmake: in a protoc-c header, make the INIT
# macros' cast of the const empty string go through uintptr_t, so that code
# using them builds with -Wcast-qual -Werror under gcc and clang.
file(READ ${HDR} text)
string(REPLACE "(char *)protobuf_c_empty_string" "(char *)(uintptr_t)protobuf_c_empty_string"
       text "${text}")
file(WRITE ${HDR} "${text}")
