# Deployment tests of the floating portals and the pacemaker side (label
# "deploy"): deploy.ocf (ocf-tester on every agent under deploy/ocf/, the
# gateway agent's exit codes and node attribute) and deploy.floating-portal
# (three nodes with corosync, pacemaker, isergw-ha and isergwd in network
# namespaces, prefix df, subnet 34: the node holding the floating address
# killed, fenced, the address moved, the client going on). Root only.
set(DEPLOY_T ${CMAKE_CURRENT_SOURCE_DIR}/deploy)
find_program(BASH bash REQUIRED)

add_test(NAME deploy.ocf
         COMMAND ${BASH} ${DEPLOY_T}/ocf.sh --isergwctl $<TARGET_FILE:isergwctl>
                 --scratch ${CMAKE_CURRENT_BINARY_DIR}/scratch/deploy-ocf)
set_tests_properties(deploy.ocf PROPERTIES LABELS deploy TIMEOUT 300 SKIP_RETURN_CODE 77)

if(TARGET isergw-ha AND TARGET ha_io)
  add_test(NAME deploy.floating-portal
           COMMAND ${BASH} ${DEPLOY_T}/floating_portal.sh --isergwd $<TARGET_FILE:isergwd>
                   --isergwctl $<TARGET_FILE:isergwctl> --ha $<TARGET_FILE:isergw-ha>
                   --io $<TARGET_FILE:ha_io> --prefix df --subnet 34
                   --scratch ${CMAKE_CURRENT_BINARY_DIR}/scratch/deploy-floating-portal)
  set_tests_properties(deploy.floating-portal PROPERTIES LABELS deploy TIMEOUT 900
                       SKIP_RETURN_CODE 77)
endif()
