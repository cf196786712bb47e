import networks.deeplabv3
import networks.pspnet
import networks.ccnet
